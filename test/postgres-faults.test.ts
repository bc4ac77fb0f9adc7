// PostgreSQL connections cut under a real server process (issue 33): reset (RST),
// closed (FIN) or silently forgotten (a NAT losing its state, a partition) by a proxy
// between the service and PostgreSQL (test/helpers/tcp-proxy.ts), under traffic and
// while idle. The process must live on, answer the requests the cut caught 503 with
// Retry-After (or serve them), and serve again within 2 s (a partition: once
// query_timeout gives up on the queries it caught); and the LISTEN connection of the
// webhook dispatcher must come back by itself.
import { after, before, describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import pg from 'pg'
import { openPostgres } from '../src/db/postgres/connection.js'
import { listenForDeliveries } from '../src/db/postgres/notifications.js'
import { inTransaction } from '../src/db/postgres/transaction.js'
import { createKeyIn, UNLIMITED } from './helpers/keys.js'
import { spawnServer, type ServerProcess } from './helpers/process.js'
import { createTestDatabase, needs, POSTGRES_ADMIN_URL } from './helpers/services.js'
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.js'

/** pg's query_timeout in src/db/postgres/connection.ts: how long a query is waited for before the pool gives up on it. */
const QUERY_TIMEOUT_MS = 6_000
/** PETSTORE_REQUEST_DEADLINE of the server under test, in seconds: shorter than query_timeout, so that it shows. */
const DEADLINE_S = 3

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `check` every 50 ms until it holds or `ms` have passed; true if it held. */
async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const deadline = performance.now() + ms
  for (;;) {
    if (await check()) return true
    if (performance.now() >= deadline) return false
    await sleep(50)
  }
}

interface Outcome {
  what: string
  /** How long it took to answer, in ms. */
  ms: number
  status: number
  text: string
  retryAfter: string | null
}

/**
 * What each request may be answered after a cut: served, or 503 with Retry-After and
 * the catalog's body (never a stack trace, nor the driver's message): a read
 * `service_unavailable`; a write that, or `outcome_unknown` when the database may have
 * committed it.
 */
function assertAcceptable({ what, status, text, retryAfter }: Outcome) {
  if (status === 200 || status === 201) return
  assert.equal(status, 503, `${what}: ${status} ${text}`)
  assert.equal(retryAfter, '1', `${what}: 503 without Retry-After`)
  const body = JSON.parse(text) as { code: string; message: string; status: number }
  assert.deepEqual(Object.keys(body), ['code', 'message', 'status'], what)
  const codes = what.startsWith('GET') ? ['service_unavailable'] : ['service_unavailable', 'outcome_unknown']
  assert.ok(codes.includes(body.code), `${what}: ${body.code}`)
  assert.doesNotMatch(body.message, /Query read timeout|ECONN|terminated|at .*\.js/, `${what}: the driver's words leaked`)
}

describe('PostgreSQL connections cut under a server process', async () => {
  if (!(await needs('postgres', 'PostgreSQL connection faults'))) return
  let database: { url: string; drop(): Promise<void> }
  let databaseName: string
  let proxy: TcpProxy
  let server: ServerProcess
  let key: string
  /** Set when the server process exits: it never should. */
  let exit: string | undefined
  let admin: pg.Client

  before(async () => {
    database = await createTestDatabase()
    databaseName = new URL(database.url).pathname.slice(1)
    ;({ secret: key } = await createKeyIn(database.url, { plan: 'enterprise', custom: UNLIMITED }))
    proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 })
    server = await spawnServer({ DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/${databaseName}`, PETSTORE_REQUEST_DEADLINE: String(DEADLINE_S) })
    void server.exited.then((code) => (exit = String(code)))
    admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL })
    await admin.connect()
  })
  after(async () => {
    server?.child.kill('SIGKILL')
    await admin?.end()
    await proxy?.stop()
    await database?.drop()
  })

  const assertAlive = (when: string) => assert.equal(exit, undefined, `the server process exited (${exit}) ${when}`)

  async function call(what: string, path: string, init: RequestInit = {}): Promise<Outcome> {
    const headers = new Headers(init.headers)
    headers.set('authorization', `Bearer ${key}`)
    if (init.body) headers.set('content-type', 'application/json')
    const start = performance.now()
    try {
      const res = await fetch(`${server.url}${path}`, { ...init, headers, signal: AbortSignal.timeout(20_000) })
      const text = await res.text()
      return { what, ms: performance.now() - start, status: res.status, text, retryAfter: res.headers.get('retry-after') }
    } catch (error) {
      // No answer at all (the process died, most likely): status 0, which no assertion accepts.
      const cause = error instanceof Error && error.cause instanceof Error ? ` (${error.cause.message})` : ''
      return { what, ms: performance.now() - start, status: 0, text: `no answer: ${String(error)}${cause}`, retryAfter: null }
    }
  }

  // Reads, batched creates, and creates with an Idempotency-Key (a transaction on a
  // connection of their own): every way a request holds a pooled connection.
  const REQUESTS: (() => Promise<Outcome>)[] = [
    () => call('GET /v1/pets', '/v1/pets?limit=5'),
    () => call('POST /v1/pets', '/v1/pets', { method: 'POST', body: JSON.stringify({ name: 'Cut', categoryId: 1 }) }),
    () => call('GET /v1/store/inventory', '/v1/store/inventory'),
    () =>
      call('POST /v1/pets with Idempotency-Key', '/v1/pets', {
        method: 'POST',
        headers: { 'idempotency-key': randomUUID() },
        body: JSON.stringify({ name: 'Cut once', categoryId: 2 }),
      }),
  ]

  /** `workers` loops of requests, one after another each, until stopped. */
  function traffic(workers: number) {
    let stopping = false
    const outcomes: Outcome[] = []
    const loops = Array.from({ length: workers }, async (_, w) => {
      for (let i = w; !stopping; i++) outcomes.push(await REQUESTS[i % REQUESTS.length]!())
    })
    return {
      outcomes,
      /** Resolves, once the requests under way are answered, with how long that took in ms. */
      async stop(): Promise<number> {
        stopping = true
        const since = performance.now()
        await Promise.all(loops)
        return performance.now() - since
      },
    }
  }

  /** Asserts the service answers GET /v1/pets 200 within `ms` (2 s) of `cutAt`. */
  async function assertServesAgain(cutAt: number, what: string, ms = 2_000) {
    let last: Outcome | undefined
    const ok = await within(ms - (performance.now() - cutAt), async () => {
      last = await call('GET /v1/pets', '/v1/pets?limit=1')
      if (last.status !== 0) assertAcceptable(last)
      return last.status === 200
    })
    if (!ok) assertAlive(`after ${what}`)
    assert.ok(ok, `no 200 within ${ms / 1000} s of ${what}; last: ${last?.status} ${last?.text}`)
  }

  /** Asserts, once `load` is stopped, that the process lived and every request was served or answered 503. */
  async function assertLivedThrough(load: ReturnType<typeof traffic>, t: TestContext) {
    await sleep(100) // an exit is seen a moment after the refused requests
    assertAlive('under traffic')
    for (const outcome of load.outcomes) assertAcceptable(outcome)
    const unavailable = load.outcomes.filter((o) => o.status === 503).length
    const slow = load.outcomes.filter((o) => o.ms > 1_000).map((o) => `${o.what} ${o.status} ${Math.round(o.ms)} ms`)
    t.diagnostic(`${load.outcomes.length} requests: ${load.outcomes.length - unavailable} served, ${unavailable} answered 503; over 1 s: ${slow.join(', ') || 'none'}`)
    assert.ok(load.outcomes.length - unavailable > 0, 'requests were served between the cuts')
  }

  it('lives through connections reset and closed under traffic, answering 503 or serving, and serves again within 2 s of each cut', async (t) => {
    const load = traffic(4)
    try {
      for (const cut of ['reset', 'close', 'reset', 'close', 'reset', 'close'] as const) {
        await sleep(400)
        const cutAt = performance.now()
        const cutCount = proxy[cut]()
        assert.ok(cutCount > 0, `the ${cut} found connections to cut`)
        await assertServesAgain(cutAt, `a ${cut} of ${cutCount} connections under traffic`)
        assertAlive(`after a ${cut} under traffic`)
      }
    } finally {
      await load.stop()
    }
    await assertLivedThrough(load, t)
  })

  it('lives through a partition under traffic: what it caught waits one query_timeout, then no connection is left waiting', async (t) => {
    const load = traffic(4)
    let waited: number
    try {
      await sleep(400)
      const cutAt = performance.now()
      // 200 ms in which nothing is answered catch every pooled connection waiting for
      // an answer that never comes, as a network partition does.
      assert.ok(proxy.forget(200) > 0, 'the partition found connections to cut')
      // Those queries are given up after query_timeout; until then the pool has no
      // connection to give.
      await assertServesAgain(cutAt, 'a partition under traffic', QUERY_TIMEOUT_MS + 2_000)
      await sleep(Math.max(0, cutAt + QUERY_TIMEOUT_MS + 2_000 - performance.now()))
    } finally {
      waited = await load.stop()
    }
    await assertLivedThrough(load, t)
    // A transaction caught is not held for a ROLLBACK behind its lost query (a second query_timeout).
    for (const { what, status, ms } of load.outcomes) assert.ok(ms < QUERY_TIMEOUT_MS + 1_500, `${what} answered ${status} after ${Math.round(ms)} ms`)
    // Nor is a connection whose query was given up handed out again, to make the next
    // query wait behind the lost one: 2 s after they were given up, nothing waits.
    assert.ok(waited < 1_000, `requests were still waiting ${Math.round(waited)} ms after the traffic stopped, 2 s after the lost queries were given up`)
  })

  it('gives a query lost in a partition up once: its connection is not handed out again, and a transaction is not held for a ROLLBACK', async () => {
    // A pool of the test's own, through a proxy of its own: the server's connections are left alone.
    const partitioned = await startTcpProxy({ host: '127.0.0.1', port: 5432 })
    const { pool, db } = openPostgres(`postgres://postgres@127.0.0.1:${partitioned.port}/${databaseName}`)
    try {
      await sql`select 1`.execute(db)
      const outcome = (query: Promise<unknown>) => query.then(() => 'answered', (error: Error) => error.message)
      const caught = [
        outcome(sql`select pg_sleep(1)`.execute(db)), // on a connection Kysely checks out and gives back
        outcome(inTransaction(pool, (client) => client.query('select pg_sleep(1)'))),
      ]
      await sleep(100)
      const cutAt = performance.now()
      partitioned.forget(Number.POSITIVE_INFINITY) // nothing ever answered: a black hole
      assert.deepEqual(await Promise.all(caught), ['Query read timeout', 'Query read timeout'])
      assert.ok(performance.now() - cutAt < QUERY_TIMEOUT_MS + 1_000, `given up after ${Math.round(performance.now() - cutAt)} ms: more than one query_timeout`)
      // As many queries as the pool holds connections: any left waiting behind a lost query would be among them.
      const again = performance.now()
      assert.deepEqual(await Promise.all(Array.from({ length: 4 }, () => outcome(sql`select 1`.execute(db)))), Array(4).fill('answered'))
      assert.ok(performance.now() - again < 1_000, `the queries after waited ${Math.round(performance.now() - again)} ms`)
    } finally {
      await db.destroy()
      await partitioned.stop()
    }
  })

  it('lives through connections reset, closed and forgotten while idle, and serves again within 2 s', async () => {
    for (const cut of ['reset', 'close', 'forget', 'forget'] as const) {
      await sleep(500) // the pool's connections idle, but for the dispatcher's poll each second
      const cutAt = performance.now()
      assert.ok(proxy[cut]() > 0, `the ${cut} found connections to cut`)
      // No requests for a poll of the dispatcher: after a forget, it is the first to
      // use a dead connection, on a client checked out of the pool (issue 33: an
      // instance with no traffic died too).
      await sleep(1_050)
      assertAlive(`after a ${cut} while idle`)
      await assertServesAgain(cutAt, `a ${cut} while idle`)
    }
    assertAlive('after the idle cuts')
  })

  const circuit = async () => /^petstore_store_circuit_open (\d)$/m.exec(await (await fetch(`${server.url}/metrics`)).text())?.[1]

  it('on a silent PostgreSQL: answers what it caught by the deadline (a write as outcome_unknown), refuses at once after a query given up, and serves within 2 s of the heal without traffic', async () => {
    const adminOnDb = new pg.Client({ connectionString: database.url })
    await adminOnDb.connect()
    const petsNamed = async (name: string) => Number((await adminOnDb.query<{ n: string }>(`select count(*) as n from pets where name = $1`, [name])).rows[0]?.n ?? 0)
    try {
      assert.equal((await call('GET /v1/pets', '/v1/pets?limit=1')).status, 200)
      const name = `Partitioned ${randomUUID()}`
      const onceName = `Partitioned once ${randomUUID()}`
      const idempotencyKey = randomUUID()
      const create = (petName: string, headers: Record<string, string> = {}) =>
        call('POST /v1/pets', '/v1/pets', { method: 'POST', headers, body: JSON.stringify({ name: petName, categoryId: 1 }) })

      proxy.silence()
      const silencedAt = performance.now()
      const caught = await Promise.all([call('GET /v1/pets', '/v1/pets?limit=1'), create(name), create(onceName, { 'idempotency-key': idempotencyKey })])
      for (const outcome of caught) {
        assertAcceptable(outcome)
        assert.equal(outcome.status, 503, `${outcome.what} was answered ${outcome.status} through a partition`)
        assert.ok(outcome.ms < DEADLINE_S * 1000 + 1_000, `${outcome.what} answered after ${Math.round(outcome.ms)} ms: past its deadline`)
      }
      assert.deepEqual(caught.map((o) => (JSON.parse(o.text) as { code: string }).code), ['service_unavailable', 'outcome_unknown', 'outcome_unknown'])

      // Once a query is given up (query_timeout), the circuit opens: no request waits any more.
      assert.ok(await within(QUERY_TIMEOUT_MS + 2_000 - (performance.now() - silencedAt), async () => (await circuit()) === '1'), 'the circuit opened')
      for (let i = 0; i < 10; i++) {
        const refused = await call('GET /v1/pets', '/v1/pets?limit=1')
        assertAcceptable(refused)
        assert.equal(refused.status, 503)
        assert.ok(refused.ms < 300, `refused after ${Math.round(refused.ms)} ms with the circuit open`)
      }

      proxy.heal()
      const healedAt = performance.now()
      assert.ok(await within(2_000, async () => (await circuit()) === '0'), 'the circuit closed within 2 s of the heal, with no /v1 request')
      assert.ok(performance.now() - healedAt < 2_500)
      assertAlive('through a silent PostgreSQL')
      assert.equal((await call('GET /v1/pets', '/v1/pets?limit=1')).status, 200)

      // The create with an Idempotency-Key, retried: exactly one pet, whatever the first attempt did.
      let retried: Outcome
      const retriedOk = await within(20_000, async () => {
        retried = await create(onceName, { 'idempotency-key': idempotencyKey })
        return retried.status === 201
      })
      assert.ok(retriedOk, `the retry with the same Idempotency-Key: ${retried!.status} ${retried!.text}`)
      await sleep(500)
      assert.equal(await petsNamed(onceName), 1, 'one pet for the Idempotency-Key, however the partition ended')
    } finally {
      proxy.heal()
      await adminOnDb.end()
    }
  })

  /** The backends of this test's database, of the server's (unnamed) connections by default, that last ran a LISTEN. */
  async function listeners(applicationName = ''): Promise<number[]> {
    const { rows } = await admin.query<{ pid: number }>(
      `select pid from pg_stat_activity where datname = $1 and application_name = $2 and query like 'LISTEN%'`,
      [databaseName, applicationName],
    )
    return rows.map((row) => row.pid)
  }

  it('listens again after its LISTEN connection is cut or terminated', async () => {
    // The cuts above took the LISTEN connection down as well: it came back through the
    // proxy, after the last (a forget) once its heartbeat went unanswered (5 s).
    assert.ok(await within(8_000, async () => (await listeners()).length === 1), `one LISTEN backend after the cuts; now ${(await listeners()).length}`)
    for (let round = 0; round < 2; round++) {
      const [pid] = await listeners()
      await admin.query('select pg_terminate_backend($1)', [pid])
      assert.ok(
        await within(5_000, async () => {
          const now = await listeners()
          return now.length === 1 && now[0] !== pid
        }),
        `a new LISTEN backend within 5 s of terminating ${pid}; now ${(await listeners()).join(', ')}`,
      )
    }
    assertAlive('after its LISTEN connections were terminated')
  })

  it('a stopped watch never listens again, even when stopped while waiting to reconnect', async () => {
    // Named, to be told apart from the server's own LISTEN connection.
    const ours = () => listeners('stopped-watch')
    const errors: unknown[] = []
    const stop = await listenForDeliveries(`${database.url}?application_name=stopped-watch`)(
      () => {},
      (error) => errors.push(error),
    )
    const [pid] = await ours()
    assert.ok(pid, 'the watch listens')
    await admin.query('select pg_terminate_backend($1)', [pid])
    assert.ok(await within(2_000, async () => errors.length > 0), 'the watch reported the loss')
    // Waiting for its first retry (100 ms): stopped now, it must not connect again.
    await stop()
    await sleep(1_000)
    assert.deepEqual(await ours(), [], 'no LISTEN backend after the watch was stopped')
  })
})
