// Reads a caller can ask for cost what the caller's page (or its own data) holds, not
// what the tables hold. The statement the store runs is captured and explained: on
// PostgreSQL run, counting the rows its plan read; on SQLite (which cannot count them)
// its plan.
//
// GET /v1/events (migration 2026-11-28-016): its condition `account_id = ? or
// account_id is null` made SQLite take both ranges of the account index and sort all
// they held (every public event, 19 ms a page at 300,000 events, on the connection that
// also writes, which holds the event loop), and PostgreSQL read the whole table for a
// type few events have. A cascading revoke (migration 2026-11-28-017) read every key of
// every account at each step of its recursion.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import Database from 'better-sqlite3'
import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import pg from 'pg'
import type { Database as Schema } from '../src/db/schema.js'
import { createApiKeysStore } from '../src/db/sql/api-keys.js'
import { createDeliveryQueue } from '../src/db/sql/delivery-queue.js'
import { createWebhookEndpointsStore } from '../src/db/sql/webhook-endpoints.js'
import { EVENT_TYPES, TEST_EVENT } from '../src/vocabulary/event-types.js'
import { DIALECTS, storeForSuite } from './helpers/dialects.js'
import { numbered } from './helpers/database.js'
import { needs } from './helpers/services.js'
import { pairsRejected, rowsRead, type PlanNode } from './helpers/plans.js'

const PUBLIC_EVENTS = 20_000
const LIMIT = 20
const TYPES = EVENT_TYPES.length + 1 // and the test event
const KEYS = 5_000
const ENDPOINTS = 2_000

for (const { dialect, create } of DIALECTS) {
  describe(`reads bounded by the caller's page (${dialect})`, async () => {
    if (dialect === 'postgres' && !(await needs('postgres', 'reads bounded by the page'))) return
    const suite = storeForSuite(create)
    const query = async <R>(text: string) => (await suite.other.db.executeQuery<R>(CompiledQuery.raw(text))).rows

    /** What `work` answers on a Kysely of the test's own over the database, and the statements it ran there (not a transaction's begin or commit): all, and the last. */
    async function captured<T>(work: (db: Kysely<Schema>) => Promise<T>): Promise<{ answer: T; statement: CompiledQuery; statements: CompiledQuery[] }> {
      const statements: CompiledQuery[] = []
      const log = (event: { level: string; query: CompiledQuery }) => {
        if (event.level === 'query' && !/^(begin|commit|rollback)/i.test(event.query.sql)) statements.push(event.query)
      }
      const db =
        dialect === 'sqlite'
          ? new Kysely<Schema>({ dialect: new SqliteDialect({ database: new Database(suite.database.url.slice('sqlite:'.length)) }), log })
          : new Kysely<Schema>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: suite.database.url, max: 1 }) }), log })
      try {
        const answer = await work(db)
        return { answer, statement: statements.at(-1)!, statements }
      } finally {
        await db.destroy()
      }
    }

    /** PostgreSQL: the statement's plan, run; with `within`, the part of it under the first node of that type. */
    async function planRun(statement: CompiledQuery, within?: string): Promise<PlanNode> {
      const [plan] = (await query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`explain (analyze, format json) ${interpolate(statement)}`))[0]!['QUERY PLAN']
      const under = (node: PlanNode): PlanNode | undefined => (node['Node Type'] === within ? node : (node.Plans ?? []).map(under).find((found) => found !== undefined))
      const part = within === undefined ? plan.Plan : under(plan.Plan)
      assert.ok(part, `no ${within} in the plan`)
      return part
    }

    /** PostgreSQL: the rows of `table` the statement's plan read, run; with `within`, in the part of the plan under the first node of that type. */
    const rowsReadBy = async (statement: CompiledQuery, table: string, within?: string) => rowsRead(await planRun(statement, within), table)

    /** SQLite: the steps of the statement's plan. */
    function planOf(statement: CompiledQuery): string[] {
      const raw = new Database(suite.database.url.slice('sqlite:'.length), { readonly: true })
      try {
        return (raw.prepare(`explain query plan ${statement.sql}`).all(...statement.parameters) as { detail: string }[]).map((step) => step.detail)
      } finally {
        raw.close()
      }
    }

    /** The events the store lists for `args`, and the statement it ran. */
    async function listed(args: { accountId: number; type?: string; beforeId?: number }) {
      const { type, ...rest } = args
      const { answer, statement } = await captured((db) => createWebhookEndpointsStore(db, dialect).events({ ...rest, ...(type === undefined ? {} : { types: [type] }), limit: LIMIT }))
      return { ids: answer.map((event) => Number(event.id)), statement }
    }

    it('lists the newest of the account\'s events and the public ones, reading a page from each type, not every public event', async () => {
      const [mine] = await query<{ id: number }>("insert into accounts (name, plan, created_at) values ('mine', 'pro', 0) returning id")
      const [theirs] = await query<{ id: number }>("insert into accounts (name, plan, created_at) values ('theirs', 'pro', 0) returning id")
      // Many public pet events, between them a few orders of each account, and one
      // webhook_endpoint.disabled of the other account (a type no public event has).
      const { prefix, rows } = numbered(dialect, PUBLIC_EVENTS)
      await query(`${prefix} insert into events (type, account_id, data, created_at, fan_out_pending)
        select case when i % 100 = 0 then 'order.placed' when i = 7 then 'webhook_endpoint.disabled' else 'pet.created' end,
          case when i % 200 = 0 then ${mine!.id} when i % 100 = 0 or i = 7 then ${theirs!.id} else null end, '{}', i, 0 from ${rows}`)
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
          const read = await rowsReadBy(statement, 'events')
          // A page from each owner and type, then the page's rows by id.
          assert.ok(read <= 2 * arms * LIMIT + LIMIT, `${JSON.stringify(args)} read ${read} events (a page from each of ${2 * arms} ranges is ${2 * arms * LIMIT})`)
        } else {
          const plan = planOf(statement)
          const reads = plan.filter((detail) => /\bevents\b/.test(detail))
          assert.equal(reads.length, 2 * arms + 1, plan.join('\n'))
          for (const read of reads) assert.match(read, /^SEARCH events USING .*\((rowid=\?|.*type=\?.*)\)$/, `every read of events is keyed by a type or an id:\n${plan.join('\n')}`)
        }
      }
    })

    it("revokes a key and every key it made or replaced, reading those keys, not every account's", async () => {
      const [account] = await query<{ id: number }>("insert into accounts (name, plan, created_at) values ('keys', 'pro', 0) returning id")
      // 5,000 keys in chains of 10, each made by the one before (the first of each by the operator).
      const { prefix, rows } = numbered(dialect, KEYS)
      await query(`${prefix} insert into api_keys (account_id, name, prefix, key_hash, scopes, created_at) select ${account!.id}, 'k', 'ps_test_k', 'hash ' || i, 'pets:read', 0 from ${rows}`)
      const [{ first }] = (await query<{ first: number | string }>('select min(id) as first from api_keys')) as [{ first: number | string }]
      await query(`update api_keys set created_by = id - 1 where mod(id - ${first}, 10) <> 0`)
      if (dialect === 'postgres') await query('analyze api_keys')

      const head = Number(first) + KEYS / 2
      const { answer: revoked, statement } = await captured((db) => createApiKeysStore(db, dialect).revoke(head, 1, true))
      assert.deepEqual(revoked, Array.from({ length: 10 }, (_, i) => head + i), 'the chain, and no other key')
      if (dialect === 'postgres') {
        // The recursion's reads (the update after it takes the 10 as the planner sees fit: at this size, a scan).
        const read = await rowsReadBy(statement, 'api_keys', 'Recursive Union')
        assert.ok(read <= 100, `read ${read} keys for a chain of 10 (every key at each step: ${10 * KEYS})`)
      } else {
        const plan = planOf(statement)
        assert.ok(!plan.some((step) => /^SCAN (k|api_keys)\b/.test(step)), `no step reads every key:\n${plan.join('\n')}`)
      }
    })

    /** SQLite, which does not show a trigger's statements in a plan: the plan of the endpoint check of each trigger named like `pattern`, as it stands in the schema, explained alone. */
    async function triggerChecks(pattern: string, values: Record<string, unknown>): Promise<{ name: string; plan: string[] }[]> {
      const triggers = await query<{ name: string; sql: string }>(`select name, sql from sqlite_master where type = 'trigger' and name like '${pattern}'`)
      return triggers.map(({ name, sql }) => {
        const check = /case when (.*?exists \(select 1 from .*?\)\)?) then 1 else 0 end/s.exec(sql)?.[1]
        assert.ok(check, `${name} checks the endpoints`)
        // Bound values, as the trigger's new.* are: a literal would let the planner drop an `is null` test on it.
        const bound = Object.keys(values).reduce((text, column) => text.replaceAll(`new.${column}`, `@${column}`), check)
        return { name, plan: planOf(CompiledQuery.raw(`select ${bound}`, [values])) }
      })
    }

    /** PostgreSQL: the endpoints (and the rows of what they subscribe to) read by the statements the triggers of `statements` run, as auto_explain tells their plans to the client. */
    async function endpointsReadByTriggers(statements: (client: pg.Client) => Promise<void>): Promise<number> {
      const client = new pg.Client({ connectionString: suite.database.url })
      const plans: PlanNode[] = []
      client.on('notice', (notice) => {
        const json = notice.message?.slice(notice.message.indexOf('{'))
        if (json?.startsWith('{')) plans.push((JSON.parse(json) as { Plan: PlanNode }).Plan)
      })
      await client.connect()
      try {
        for (const setting of ["load 'auto_explain'", 'set auto_explain.log_min_duration = 0', 'set auto_explain.log_nested_statements = on', 'set auto_explain.log_analyze = on', "set auto_explain.log_format = 'json'", "set auto_explain.log_level = 'notice'"]) await client.query(setting)
        await statements(client)
      } finally {
        await client.end()
      }
      assert.ok(plans.length > 0, 'auto_explain told the plans')
      return plans.reduce((sum, plan) => sum + rowsRead(plan, 'webhook_endpoints') + rowsRead(plan, 'webhook_subscriptions'), 0)
    }

    /** `n` endpoints of 200 accounts of their own, taking `types`. */
    async function manyEndpoints(n: number, types: string) {
      const accounts = numbered(dialect, 200)
      await query(`${accounts.prefix} insert into accounts (name, plan, created_at) select 'endpoints ${types}', 'pro', 0 from ${accounts.rows}`)
      const endpoints = numbered(dialect, n)
      await query(`${endpoints.prefix} insert into webhook_endpoints (account_id, url, description, enabled_events, secret, created_at)
        select (select min(id) from accounts where name = 'endpoints ${types}') + i % 200, 'https://example.com/', '', '${types}', 'sealed', 0 from ${endpoints.rows}`)
    }

    it("marks an order's events for fan-out by its own account's endpoints, not every account's (migration 2026-11-28-018)", async () => {
      const [mine] = await query<{ id: number }>("insert into accounts (name, plan, created_at) values ('orders', 'pro', 0) returning id")
      // 2,000 endpoints of 200 other accounts, none taking order events.
      await manyEndpoints(ENDPOINTS, 'pet.created')
      if (dialect === 'sqlite') {
        const checks = await triggerChecks('orders_event_%', { account_id: mine!.id, status: 'completed' })
        assert.equal(checks.length, 2)
        for (const { name, plan } of checks) assert.ok(!plan.some((step) => /^SCAN e\b/.test(step)), `${name} reads no endpoint of another account:\n${plan.join('\n')}`)
        return
      }
      await query('analyze webhook_endpoints')
      const [category] = await query<{ id: number }>("insert into categories (name, name_key, created_at) values ('Trigger test', 'trigger test', 0) returning id")
      const [pet] = await query<{ id: number }>(`insert into pets (name, category_id, status, created_at) values ('Orderly', ${category!.id}, 'available', 0) returning id`)
      const read = await endpointsReadByTriggers(async (client) => {
        const { rows } = await client.query<{ id: string }>(`insert into orders (pet_id, account_id, status, placed_at) values (${pet!.id}, ${mine!.id}, 'placed', 0) returning id`)
        await client.query(`update orders set status = 'completed', closed_at = 1 where id = ${rows[0]!.id}`)
      })
      assert.ok(read <= 10, `an order placed and completed read ${read} endpoints (other accounts' ${ENDPOINTS}, each time)`)
    })

    it("marks a pet's and a category's events for fan-out without reading every endpoint when none takes them (migration 2026-11-28-019)", async () => {
      // Every endpoint, the order test's and 2,000 more, takes order events alone: the check finds no endpoint for a pet's or a category's.
      await query("update webhook_endpoints set enabled_events = 'order.placed'")
      await manyEndpoints(ENDPOINTS, 'order.placed')
      if (dialect === 'sqlite') {
        const checks = [...(await triggerChecks('pets_event_%', {})), ...(await triggerChecks('categories_event_%', {}))]
        assert.equal(checks.length, 6)
        for (const { name, plan } of checks) assert.ok(!plan.some((step) => /^SCAN (?!CONSTANT ROW)/.test(step)), `${name} reads no table whole:\n${plan.join('\n')}`)
        return
      }
      await query('analyze webhook_endpoints, webhook_subscriptions')
      const read = await endpointsReadByTriggers(async (client) => {
        const { rows } = await client.query<{ id: string }>(`insert into categories (name, name_key, created_at) values ('Marked', 'marked', 0) returning id`)
        const category = rows[0]!.id
        // Three pets in one statement, as the group commit writes them: the check runs for each row.
        await client.query(`insert into pets (name, category_id, status, created_at) select 'Marked ' || i, ${category}, 'available', 0 from generate_series(1, 3) i`)
        await client.query(`update pets set status = 'pending' where category_id = ${category}`)
        await client.query(`delete from pets where category_id = ${category}`)
        await client.query(`update categories set description = 'changed' where id = ${category}`)
        await client.query(`delete from categories where id = ${category}`)
      })
      assert.ok(read <= 10, `pets and a category written, changed and deleted read ${read} endpoints (${ENDPOINTS * 2} of them)`)
    })

    it('fans public events out to the endpoints subscribed to their type, not reading every endpoint for each event (migration 2026-11-28-019)', async () => {
      // 2,000 endpoints taking order events alone (and those of the tests before), one taking every type, one taking pet.created.
      await manyEndpoints(ENDPOINTS, 'order.placed')
      const [account] = await query<{ id: number }>("insert into accounts (name, plan, created_at) values ('fan-out', 'pro', 0) returning id")
      const subscribers = await query<{ id: number | string }>(`insert into webhook_endpoints (account_id, url, description, enabled_events, secret, created_at)
        values (${account!.id}, 'https://example.com/', '', '*', 'sealed', 0), (${account!.id}, 'https://example.com/', '', 'pet.created', 'sealed', 0) returning id`)
      const events = 100
      const pending = async () => {
        const { prefix, rows } = numbered(dialect, events)
        await query(`${prefix} insert into events (type, account_id, data, created_at, fan_out_pending) select 'pet.created', null, '{}', i, 1 from ${rows}`)
      }
      await query('update events set fan_out_pending = 0')
      // Statistics that have not seen the pending events, as a running service's seldom have.
      if (dialect === 'postgres') await query('analyze')
      await pending()
      const { answer, statements } = await captured((db) => createDeliveryQueue(db, dialect).fanOut(Date.now(), 500))
      assert.equal(answer.events, events)
      const made = await query<{ endpoint_id: number | string; n: number | string }>('select endpoint_id, count(*) as n from webhook_deliveries group by endpoint_id order by endpoint_id')
      assert.deepEqual(made.map((row) => [Number(row.endpoint_id), Number(row.n)]), subscribers.map(({ id }) => [Number(id), events]), 'a delivery of each event to each subscriber, and to no other endpoint')
      const insert = statements.find((statement) => /insert into webhook_deliveries/.test(statement.sql))
      assert.ok(insert, 'the fan-out inserts the deliveries')
      const [{ n: endpoints }] = (await query<{ n: number | string }>('select count(*) as n from webhook_endpoints')) as [{ n: number | string }]
      if (dialect === 'postgres') {
        await pending()
        // Run again, over a new batch: the plan's reads as the fan-out makes them. A join of
        // the events to the endpoints on the rule alone may read the endpoints once, into
        // memory, and then compare each event with each of them.
        const plan = await planRun(insert)
        const read = rowsRead(plan, 'webhook_endpoints')
        const compared = pairsRejected(plan)
        assert.ok(read <= 3 * Number(endpoints), `a batch of ${events} events read ${read} endpoints (each endpoint for each event: ${events * Number(endpoints)})`)
        assert.ok(compared <= 3 * Number(endpoints), `a batch of ${events} events compared ${compared} pairs of rows that its joins then refused (each event with each endpoint: ${events * Number(endpoints)})`)
      } else {
        const plan = planOf(insert)
        assert.ok(!plan.some((step) => /^SCAN e\b/.test(step)), `no step reads every endpoint:\n${plan.join('\n')}`)
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
