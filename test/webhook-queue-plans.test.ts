// The delivery queue's statements on PostgreSQL go by their indexes whatever the
// statistics say: the queue's connections run with DELIVERY_QUEUE_SETTINGS
// (postgres-store.ts). With no statistics yet (a new installation under a burst of
// writes: the planner guesses a few dozen pending), the fan-out would read every pending
// event and sort them for each batch, then scan the whole table to clear the batch's
// marks: a backlog of n events cost n²/500 rows read to fan out (40 ms a batch at 40,000
// pending). A claim would read and sort every pending delivery to find the oldest due
// (25 ms at 30,000 pending, instead of 4).
//
// Each statement is taken as the queue runs it, and explained (run, and rolled back) on
// a connection set as the queue's are; a test counts the rows its plan read.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { DeliveryQueue } from '../src/db/delivery-queue.js'
import { DELIVERY_QUEUE_SETTINGS } from '../src/db/postgres/postgres-store.js'
import type { Database } from '../src/db/schema.js'
import { createDeliveryQueue } from '../src/db/sql/delivery-queue.js'
import { storeForSuite } from './helpers/dialects.js'
import { createTestDatabase, needs } from './helpers/services.js'
import { rowsRead, type PlanNode } from './helpers/plans.js'

describe("the delivery queue's plans without statistics (postgres)", async () => {
  if (!(await needs('postgres', "the delivery queue's plans"))) return
  // The store migrates the database; the test reads and writes it on a connection of its own.
  const suite = storeForSuite(createTestDatabase)
  const query = async <R>(text: string, values: readonly unknown[] = []) => (await suite.other.db.executeQuery<R>(CompiledQuery.raw(text, [...values]))).rows

  /**
   * The statements `work` has the queue run, captured: run in a transaction rolled back
   * after (Kysely's), or not run at all (a named one, which answers no rows here).
   */
  async function statementsOf(work: (queue: DeliveryQueue) => Promise<unknown>): Promise<CompiledQuery[]> {
    const captured: CompiledQuery[] = []
    const db = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: suite.database.url, max: 1 }) }),
      log: (event) => {
        if (event.level === 'query') captured.push(event.query)
      },
    })
    const rollBack = new Error('rolled back')
    try {
      await db
        .transaction()
        .execute(async (trx) => {
          await work(createDeliveryQueue(trx, 'postgres', undefined, async (_name, named) => (captured.push(named), [])))
          throw rollBack
        })
        .catch((error: unknown) => {
          if (error !== rollBack) throw error
        })
    } finally {
      await db.destroy()
    }
    return captured.filter((statement) => !/^(begin|commit|rollback)/i.test(statement.sql))
  }

  /** The rows of `table` the statement's plan read, run (and rolled back) on a connection set as the queue's are. */
  async function readOf(statement: CompiledQuery, table: string): Promise<number> {
    return suite.other.db.connection().execute(async (connection) => {
      await connection.executeQuery(CompiledQuery.raw('begin'))
      try {
        for (const [name, value] of Object.entries(DELIVERY_QUEUE_SETTINGS)) await connection.executeQuery(CompiledQuery.raw('select set_config($1, $2, true)', [name, value]))
        const { rows } = await connection.executeQuery<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(CompiledQuery.raw(`explain (analyze, format json) ${statement.sql}`, [...statement.parameters]))
        return rowsRead(rows[0]!['QUERY PLAN'][0].Plan, table)
      } finally {
        await connection.executeQuery(CompiledQuery.raw('rollback'))
      }
    })
  }

  it('reads one batch of pending events, not all of them, for a batch, and one claim the oldest due deliveries', async () => {
    const [account] = await query<{ id: number }>("insert into accounts (name, plan, created_at) values ('a', 'pro', 0) returning id")
    const [endpoint] = await query<{ id: number }>(
      "insert into webhook_endpoints (account_id, url, description, enabled_events, secret, created_at) values ($1, 'https://example.com/', '', '*', 'sealed', 0) returning id",
      [account!.id],
    )
    // A burst of 20,000 events, and their deliveries, into tables no ANALYZE has read yet
    // (a new installation; autovacuum kept off, so that none reads them meanwhile).
    for (const table of ['events', 'webhook_deliveries']) await query(`alter table ${table} set (autovacuum_enabled = false)`)
    await query("insert into events (type, account_id, data, created_at, fan_out_pending) select 'pet.created', null, '{}', 0, 1 from generate_series(1, 20000)")

    const [fanOut] = await statementsOf((queue) => queue.fanOut(1, 500))
    const read = await readOf(fanOut!, 'events')
    // The batch from the index, then each of its 500 marks cleared through the primary key.
    assert.ok(read >= 500 && read <= 1_500, `a fan-out of 500 read ${read} events (every pending one, twice: 40,000)`)

    await query(
      "insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at, trigger) select $1, id, 'pending', 0, 0, 0, 'scheduled' from events",
      [endpoint!.id],
    )
    const [claim] = await statementsOf((queue) => queue.claimDue(1, 60_000, 64, 8))
    // A claim looks at the 1,024 oldest due at most (sql/delivery-queue.ts CLAIM_LOOKS_AT), and at the 8 it takes again.
    const claimed = await readOf(claim!, 'webhook_deliveries')
    assert.ok(claimed > 0 && claimed <= 2_048, `a claim read ${claimed} deliveries (every pending one: 20,000)`)
  })

  it("hops endpoint by endpoint when the oldest due all belong to a full endpoint, reading each one's oldest few, not the whole backlog", async () => {
    // Whatever an earlier test left pending is done: this one's queue is its own.
    await query("update webhook_deliveries set status = 'delivered', lease_until = null where status = 'pending'")
    const [account] = await query<{ id: number }>("insert into accounts (name, plan, created_at) values ('hops', 'pro', 0) returning id")
    const endpoints = await query<{ id: number }>(
      "insert into webhook_endpoints (account_id, url, description, enabled_events, secret, created_at) select $1, 'https://example.com/' || n, '', '*', 'sealed', 0 from generate_series(1, 101) n returning id",
      [account!.id],
    )
    const [hanging, ...others] = endpoints.map((row) => Number(row.id))
    const [{ first }] = (await query<{ first: string }>(
      "with made as (insert into events (type, account_id, data, created_at, fan_out_pending) select 'pet.created', null, '{}', 0, 0 from generate_series(1, 12000) returning id) select min(id) as first from made",
    )) as [{ first: string }]
    // An endpoint that never answers: the 10,000 oldest due are its own, and it has its 8
    // under lease. Then 20 due, later, for each of 100 others.
    await query(
      "insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at, trigger) select $1, $2::bigint + n, 'pending', 0, 0, 0, 'scheduled' from generate_series(0, 9999) n",
      [hanging, first],
    )
    await query('update webhook_deliveries set lease_until = 9e15 where id in (select id from webhook_deliveries where endpoint_id = $1 order by id limit 8)', [hanging])
    await query(
      "insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at, trigger) select e, $2::bigint + 10000 + n, 'pending', 0, 1, 0, 'scheduled' from unnest($1::bigint[]) e, generate_series(0, 19) n",
      [others, first],
    )
    const [claim] = await statementsOf((queue) => queue.claimDue(2, 60_000, 64, 8))
    const read = await readOf(claim!, 'webhook_deliveries')
    // The head (CLAIM_LOOKS_AT, 1,024), then at most HOPS (64) endpoints from each end and
    // HOP_TAKES (4) of each. A hop written as a correlated IN read every delivery once for
    // each endpoint (12,000 × 101), and a claim took 500 ms.
    assert.ok(read > 0 && read <= 3_000, `a claim read ${read} deliveries`)
    const taken = await createDeliveryQueue(suite.other.db, 'postgres').claimDue(2, 60_000, 64, 8)
    assert.equal(taken.length, 64)
    assert.ok(taken.every((delivery) => delivery.endpoint.id !== hanging), 'none of the full endpoint')
  })

  it("has autovacuum clear the queue's dead rows, and analyze it, once 1 % has changed (migration 2026-11-28-015)", async () => {
    const rows = await query<{ relname: string; reloptions: string[] }>(
      "select relname, reloptions from pg_class where relname in ('webhook_deliveries', 'events') order by relname",
    )
    const expected = ['autovacuum_vacuum_scale_factor=0.01', 'autovacuum_vacuum_threshold=1000', 'autovacuum_analyze_scale_factor=0.01', 'autovacuum_analyze_threshold=1000']
    assert.deepEqual(
      rows.map((row) => [row.relname, expected.every((option) => row.reloptions?.includes(option))]),
      [
        ['events', true],
        ['webhook_deliveries', true],
      ],
      JSON.stringify(rows),
    )
  })
})
