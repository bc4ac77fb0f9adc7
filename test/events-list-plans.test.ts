// GET /v1/events reads a page's worth of events, not every event kept (migration
// 2026-11-28-016). Its condition was `account_id = ? or account_id is null`: SQLite took
// both ranges of the account index and sorted all they held (every public event, 19 ms
// a page at 300,000 events, on the connection that also writes, which holds the event
// loop); PostgreSQL read the whole table for a type few events have.
//
// The statement the store runs is captured, checked against the page worked out from
// every row, and explained: on PostgreSQL run, counting the rows its plan read; on
// SQLite (which cannot count them) its plan, each read of events keyed by a type or an id.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import Database from 'better-sqlite3'
import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import pg from 'pg'
import type { Database as Schema } from '../src/db/schema.js'
import { createWebhookEndpointsStore } from '../src/db/sql/webhook-endpoints.js'
import { EVENT_TYPES, TEST_EVENT } from '../src/vocabulary/event-types.js'
import { DIALECTS, storeForSuite } from './helpers/dialects.js'
import { needs } from './helpers/services.js'

interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Actual Rows': number
  'Actual Loops': number
  'Rows Removed by Filter'?: number
  Plans?: PlanNode[]
}

/** The rows of `table` the nodes of a plan that scan it read: those they gave, and those their filters threw away. */
const rowsRead = (node: PlanNode, table: string): number =>
  (node['Relation Name'] === table && /Scan/.test(node['Node Type']) ? (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'] : 0) +
  (node.Plans ?? []).reduce((sum, child) => sum + rowsRead(child, table), 0)

const PUBLIC_EVENTS = 20_000
const LIMIT = 20
const TYPES = EVENT_TYPES.length + 1 // and the test event

for (const { dialect, create } of DIALECTS) {
  describe(`the events list's reads (${dialect})`, async () => {
    if (dialect === 'postgres' && !(await needs('postgres', "the events list's reads"))) return
    const suite = storeForSuite(create)
    const query = async <R>(text: string) => (await suite.other.db.executeQuery<R>(CompiledQuery.raw(text))).rows

    /** The events the store lists for `args`, and the statement it ran, captured on a Kysely of the test's own. */
    async function listed(args: { accountId: number; type?: string; beforeId?: number }) {
      const captured: CompiledQuery[] = []
      const log = (event: { level: string; query: CompiledQuery }) => {
        if (event.level === 'query') captured.push(event.query)
      }
      const db =
        dialect === 'sqlite'
          ? new Kysely<Schema>({ dialect: new SqliteDialect({ database: new Database(suite.database.url.slice('sqlite:'.length)) }), log })
          : new Kysely<Schema>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: suite.database.url, max: 1 }) }), log })
      try {
        const events = await createWebhookEndpointsStore(db, dialect).events({ ...args, limit: LIMIT })
        return { ids: events.map((event) => Number(event.id)), statement: captured.at(-1)! }
      } finally {
        await db.destroy()
      }
    }

    it('lists the newest of the account\'s events and the public ones, reading a page from each type, not every public event', async () => {
      const [mine] = await query<{ id: number }>("insert into accounts (name, plan, created_at) values ('mine', 'pro', 0) returning id")
      const [theirs] = await query<{ id: number }>("insert into accounts (name, plan, created_at) values ('theirs', 'pro', 0) returning id")
      // Many public pet events, between them a few orders of each account, and one
      // webhook_endpoint.disabled of the other account (a type no public event has).
      const count = dialect === 'sqlite' ? `with recursive n (i) as (select 1 union all select i + 1 from n where i < ${PUBLIC_EVENTS})` : ''
      const series = dialect === 'sqlite' ? 'n' : `generate_series(1, ${PUBLIC_EVENTS}) n (i)`
      await query(`${count} insert into events (type, account_id, data, created_at, fan_out_pending)
        select case when i % 100 = 0 then 'order.placed' when i = 7 then 'webhook_endpoint.disabled' else 'pet.created' end,
          case when i % 200 = 0 then ${mine!.id} when i % 100 = 0 or i = 7 then ${theirs!.id} else null end, '{}', i, 0 from ${series}`)
      if (dialect === 'postgres') await query('analyze events')
      const all = await query<{ id: number | string; type: string; account_id: number | string | null }>('select id, type, account_id from events order by id desc')

      const cases = [{}, { type: 'order.placed' }, { type: 'webhook_endpoint.disabled' }, { type: TEST_EVENT }, { beforeId: Number(all[PUBLIC_EVENTS / 2]!.id) }]
      for (const args of cases) {
        const { ids, statement } = await listed({ accountId: mine!.id, ...args })
        const expected = all
          .filter((row) => (row.account_id === null || Number(row.account_id) === mine!.id) && (!('type' in args) || row.type === args.type) && (!('beforeId' in args) || Number(row.id) < args.beforeId!))
          .slice(0, LIMIT)
          .map((row) => Number(row.id))
        assert.deepEqual(ids, expected, JSON.stringify(args))

        const arms = 'type' in args ? 1 : TYPES
        if (dialect === 'postgres') {
          const [plan] = (await query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`explain (analyze, format json) ${interpolate(statement)}`))[0]!['QUERY PLAN']
          const read = rowsRead(plan.Plan, 'events')
          // A page from each owner and type, then the page's rows by id.
          assert.ok(read <= 2 * arms * LIMIT + LIMIT, `${JSON.stringify(args)} read ${read} events (a page from each of ${2 * arms} ranges is ${2 * arms * LIMIT})`)
        } else {
          const raw = new Database(suite.database.url.slice('sqlite:'.length), { readonly: true })
          try {
            const plan = (raw.prepare(`explain query plan ${statement.sql}`).all(...statement.parameters) as { detail: string }[]).map((step) => step.detail)
            const reads = plan.filter((detail) => /\bevents\b/.test(detail))
            assert.equal(reads.length, 2 * arms + 1, plan.join('\n'))
            for (const read of reads) assert.match(read, /^SEARCH events USING .*\((rowid=\?|.*type=\?.*)\)$/, `every read of events is keyed by a type or an id:\n${plan.join('\n')}`)
          } finally {
            raw.close()
          }
        }
      }
    })
  })
}

/** The statement with its values written in (EXPLAIN ANALYZE over a raw query takes none). */
function interpolate({ sql, parameters }: CompiledQuery): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => {
    const value = parameters[Number(n) - 1]
    return typeof value === 'number' ? String(value) : `'${String(value).replaceAll("'", "''")}'`
  })
}
