// The fan-out on PostgreSQL takes a batch of pending events from their partial index,
// oldest first, whatever the statistics say. With none yet (a new installation under a
// burst of writes: it guesses a few dozen pending), the planner would rather read every pending
// event and sort them for each batch, then scan the whole table to clear the batch's
// marks: a backlog of n events then cost n²/500 rows read to fan out (40 ms a batch at
// 40,000 pending).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { openStore } from '../src/db/open-store.js'
import { migratedDatabaseForSuite } from './helpers/migrated-database.js'
import { needs } from './helpers/services.js'

describe("the fan-out's plan without statistics (postgres)", async () => {
  if (!(await needs('postgres', "the fan-out's plan"))) return
  const database = migratedDatabaseForSuite()

  /** Rows read through the index of pending events, in all, as PostgreSQL's statistics count them (flushed when a connection closes). */
  async function pendingIndexReads(): Promise<number> {
    await database.client.query('select pg_stat_clear_snapshot()')
    const { rows } = await database.client.query<{ n: string }>("select idx_tup_read as n from pg_stat_user_indexes where indexrelname = 'events_fan_out_pending'")
    return Number(rows[0]!.n)
  }

  it('reads one batch of pending events, not all of them, for a batch', async () => {
    const { rows } = await database.client.query<{ id: number }>("insert into accounts (name, plan, created_at) values ('a', 'pro', 0) returning id")
    await database.client.query("insert into webhook_endpoints (account_id, url, description, enabled_events, secret, created_at) values ($1, 'https://example.com/', '', '*', 'sealed', 0)", [rows[0]!.id])
    // A burst of 20,000 events into a table no ANALYZE has read yet (a new installation; autovacuum kept off, so
    // that none reads it meanwhile): the planner guesses a few dozen pending, and would sort them all for a batch.
    await database.client.query('alter table events set (autovacuum_enabled = false)')
    await database.client.query("insert into events (type, account_id, data, created_at, fan_out_pending) select 'pet.created', null, '{}', 0, 1 from generate_series(1, 20000)")
    const before = await pendingIndexReads()

    const store = await openStore(database.url)
    try {
      assert.equal(await store.deliveries.fanOut(1, 500), 500)
    } finally {
      // Its connections' statistics are flushed as they close.
      await store.close()
    }
    const read = (await pendingIndexReads()) - before
    assert.ok(read >= 500 && read < 2_000, `the batch of 500 read ${read} index entries (every pending event: 20,000)`)
  })
})
