// The delivery queue's statements on PostgreSQL go by their indexes whatever the
// statistics say (postgres-store.ts, the queue's connections). With none yet (a new
// installation under a burst of writes: the planner guesses a few dozen pending), the
// fan-out would read every pending event and sort them for each batch, then scan the
// whole table to clear the batch's marks: a backlog of n events cost n²/500 rows read
// to fan out (40 ms a batch at 40,000 pending). A claim would read and sort every
// pending delivery to find the oldest due (25 ms at 30,000 pending, instead of 4).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { openStore } from '../src/db/open-store.js'
import { DELIVERY_QUEUE_SETTINGS } from '../src/db/postgres/postgres-store.js'
import { createDeliveryQueue } from '../src/db/sql/delivery-queue.js'
import { openDatabase } from './helpers/database.js'
import { migratedDatabaseForSuite } from './helpers/migrated-database.js'
import { needs } from './helpers/services.js'

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Actual Rows': number
  'Actual Loops': number
  Plans?: PlanNode[]
}

/** The nodes of a plan that read `table`'s rows. */
const scansOf = (node: PlanNode, table: string): PlanNode[] => [
  ...(node['Relation Name'] === table && /Scan/.test(node['Node Type']) ? [node] : []),
  ...(node.Plans ?? []).flatMap((child) => scansOf(child, table)),
]

describe("the delivery queue's plans without statistics (postgres)", async () => {
  if (!(await needs('postgres', "the delivery queue's plans"))) return
  const database = migratedDatabaseForSuite()

  /** Rows read through `index`, in all, as PostgreSQL's statistics count them (flushed when a connection closes). */
  async function indexReads(index: string): Promise<number> {
    await database.client.query('select pg_stat_clear_snapshot()')
    const { rows } = await database.client.query<{ n: string }>('select idx_tup_read as n from pg_stat_user_indexes where indexrelname = $1', [index])
    return Number(rows[0]!.n)
  }
  let endpointId: number

  it('reads one batch of pending events, not all of them, for a batch', async () => {
    const { rows } = await database.client.query<{ id: number }>("insert into accounts (name, plan, created_at) values ('a', 'pro', 0) returning id")
    const endpoint = await database.client.query<{ id: number }>(
      "insert into webhook_endpoints (account_id, url, description, enabled_events, secret, created_at) values ($1, 'https://example.com/', '', '*', 'sealed', 0) returning id",
      [rows[0]!.id],
    )
    endpointId = endpoint.rows[0]!.id
    // A burst of 20,000 events into a table no ANALYZE has read yet (a new installation; autovacuum kept off, so
    // that none reads it meanwhile): the planner guesses a few dozen pending, and would sort them all for a batch.
    for (const table of ['events', 'webhook_deliveries']) await database.client.query(`alter table ${table} set (autovacuum_enabled = false)`)
    await database.client.query("insert into events (type, account_id, data, created_at, fan_out_pending) select 'pet.created', null, '{}', 0, 1 from generate_series(1, 20000)")
    const before = await indexReads('events_fan_out_pending')
    const store = await openStore(database.url)
    try {
      assert.equal(await store.deliveries.fanOut(1, 500), 500)
    } finally {
      // Its connections' statistics are flushed as they close.
      await store.close()
    }
    const read = (await indexReads('events_fan_out_pending')) - before
    assert.ok(read >= 500 && read < 2_000, `the batch of 500 read ${read} index entries (every pending event: 20,000)`)
  })

  it('reads the oldest due deliveries, not all of them, for a claim', async () => {
    // The other 19,500 events' deliveries, made beside the fan-out, and still no statistics.
    await database.client.query(
      "insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at, trigger) select $1, id, 'pending', 0, 0, 0, 'scheduled' from events where fan_out_pending = 1",
      [endpointId],
    )
    // The claim as the queue runs it, explained on a connection set as the queue's are (and rolled back: it leases).
    const named: { sql: string; parameters: readonly unknown[] }[] = []
    const { db } = openDatabase(database.url)
    try {
      await createDeliveryQueue(db, 'postgres', undefined, async (_name, query) => (named.push(query), [])).claimDue(1, 60_000, 64, 8)
    } finally {
      await db.destroy()
    }
    await database.client.query('begin')
    try {
      for (const [name, value] of Object.entries(DELIVERY_QUEUE_SETTINGS)) await database.client.query('select set_config($1, $2, true)', [name, value])
      const { rows } = await database.client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`explain (analyze, format json) ${named[0]!.sql}`, [...named[0]!.parameters])
      const read = scansOf(rows[0]!['QUERY PLAN'][0].Plan, 'webhook_deliveries').reduce((sum, node) => sum + node['Actual Rows'] * node['Actual Loops'], 0)
      // A claim looks at the 1,024 oldest due at most (sql/delivery-queue.ts CLAIM_LOOKS_AT), and at the 8 it takes again.
      assert.ok(read > 0 && read <= 2_048, `the claim read ${read} deliveries (every pending one: 20,000)`)
    } finally {
      await database.client.query('rollback')
    }
  })
})
