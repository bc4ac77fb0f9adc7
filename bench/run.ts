// `npm run bench`: the service (compiled, `node dist/server.js`) against a bare
// node:http baseline serving one of its own answers verbatim, same generator and
// settings, alternating B S… B S… B; on PostgreSQL also against pgbench running the
// service's own statements (B S… P… B). Options: see USAGE.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { PET_COLUMNS } from '../src/db/sql/pets-sql.js'
import { checkOut, type Checkout } from './against.js'
import { BASELINE_PATH, captureResponse, startBaseline } from './baseline.js'
import { detectGenerator, runLoad, type Generator, type LoadSpec } from './load.js'
import { describeStatement, hasPgbench, percentile, PGBENCH_MISSING, runPgbench, type PgbenchStatement } from './pgbench.js'
import { cpuSeconds, freePort, killAll, peakRss, pinSelf, resetPeakRss, SERVICE_NODE_FLAGS, spawnPinned, stop, waitForPort, type Pinned } from './processes.js'
import { ALL_ENDPOINTS, render, writeResults, type EndpointId, type Measured, type PgbenchMeasured, type Report, type SuiteResult } from './report.js'
import { ORDERS_PATH, type Scenario } from './scenarios.js'
import { startReceiver, subscribe, type Receiver } from './receiver.js'
import { createEnterpriseKey, createTempStore, REDIS_URL, seedInBulk, seedOrderPool, seedThroughApi, type StoreKind, type TempStore, webhooksToSend } from './store.js'

const USAGE = `npm run bench -- [options]
  --pets N[,N…]         pets to seed, one suite per size (default 10000)
  --compare-sizes       same as --pets 10000,1000000
  --store sqlite|postgres   (default sqlite; postgres also sets REDIS_URL, and runs
                        pgbench, when installed, on the statements of list, list-sold,
                        post and get: PostgreSQL alone, on the same database)
  --duration S          seconds per run (default 10)
  --rounds R            B S… rounds, each on fresh processes of the services; a last baseline run closes them (default 2;
                        with --against, an even number: which revision goes first turns each round)
  --connections C       (default 50)
  --only ID[,ID…]       endpoints to load: list, list-sold, post, get, order, inventory,
                        mixed (default all of these), list-gzip (the list page gzipped),
                        list-category (one category), search (q of three letters),
                        mixed-name (mixed, its list one status by name: a page
                        the list cache reads again after each write)
  --seed api|bulk       (default: api up to 10000 pets, bulk above)
  --generator wrk|autocannon   (default: wrk when installed)
  --against REV         also run REV (a git revision) of the service, built in a temp
                        worktree, on a store of its own, alternating with this checkout
                        (B S A S A… B): each endpoint's ratio to REV, POST and
                        reservations with a floor of 0.90. Default: c1eff8a, the
                        release before scopes, usage, the outbox and counts (issue 36),
                        so that every feature is measured against it; none: no other
  --cpu-prof DIR        run the service with --cpu-prof, writing the profile to DIR
  --webhook             subscribe a receiver on loopback to every event of this checkout's
                        service (not --against's): compare with --against HEAD; the
                        webhooks delivered per second during each run and after it,
                        catching up, and the p99 from an event's write to its delivery
                        (the run's and its catching up's), are in a table of their own
  --dispatch in-process|process|none   with --webhook: the service delivers them itself
                        (default), or runs with PETSTORE_DISPATCH=off beside a 'petstore
                        dispatch' process on the load generator's core at nice 19, or
                        delivers nothing (none: what the writes alone pay for the events)
  --no-write            print the table only; leave bench/results.md alone`

const SERVICE_CORE = 0
/**
 * What every run is measured against unless told otherwise: the last release before
 * key scopes, usage history, the events outbox and the inventory counts, whose costs
 * hid while each was measured against the same build without it (issue 36).
 */
const REFERENCE_RELEASE = 'c1eff8a'
const GENERATOR_CORE = 1
/**
 * With --webhook, during a run and while a dispatcher catches up: how often the outbox's
 * tables are vacuumed and analyzed (PostgreSQL; TempStore's analyzeOutbox), as
 * autovacuum with the naptime docs/operations.md recommends for the outbox (15 s).
 */
const ANALYZE_EVERY_MS = 15_000
/** How long after a --webhook run the dispatcher may take to deliver what the run queued (PostgreSQL delivers the warm-up's 300,000 in about 5 minutes). */
const CATCH_UP_LIMIT_MS = 1_800_000
// Warm-up per target, not counted. The first second of load on a fresh process stalls
// its event loop for up to 300 ms (V8's compiler threads share the pinned core), and
// the first seconds of creates ran slower than the next (bench/results.md, seventh pass).
const WARMUP_S = 5
/** The warm-up of a service started again between rounds: its store's pages are in the OS's cache already, its JIT is not. */
const RESTART_WARMUP_S = 2
const SEED_THROUGH_API_MAX = 10_000
const POST_PET = { name: 'Bench', categoryId: 7, status: 'pending' } as const
const POST_BODY = JSON.stringify(POST_PET)
// What a list route asks the store for: ?limit=20, plus one to learn whether a next page exists.
const LIST_ROWS = 21
const middlePet = (pets: number) => Math.max(1, Math.ceil(pets / 2))
const CATEGORY_PATH = '/v1/pets?limit=20&categoryId=3'
// Three letters some names of the seed hold (bench/store.ts seedPet): a few in a thousand.
const SEARCH_PATH = '/v1/pets?limit=20&q=lun'
const BY_NAME_PATH = '/v1/pets?limit=20&status=sold&sort=name'
// Reservations per second assumed for the first (warm-up) run of the order and mixed
// endpoints, before the run has shown its own rate (see ensurePool): above anything
// seen here (POST /v1/pets, a lighter write, peaked near 24,000; one mixed request in
// twenty reserves).
const ORDER_RATE_GUESS = 25_000
const MIXED_RESERVE_RATE_GUESS = 3_000

interface Endpoint {
  title: string
  method: 'GET' | 'POST'
  path: (pets: number) => string
  /** Requests that differ from one to the next, reserving pets of the order pool. */
  scenario?: (firstPetId: number) => Scenario
  /** The statement the service runs for a request, for pgbench to run alone on PostgreSQL. */
  statement?: (pets: number) => PgbenchStatement
  /** Headers beyond the key (and content-type on POST). */
  headers?: Record<string, string>
}

const ENDPOINTS: Record<EndpointId, Endpoint> = {
  list: {
    title: 'GET /v1/pets?limit=20',
    method: 'GET',
    path: () => '/v1/pets?limit=20',
    statement: () => ({ pick: (sql) => sql.listAll, values: [0, LIST_ROWS] }),
  },
  // The same page compressed, as a browser or curl --compressed asks for it (about 2.3 KB raw).
  'list-gzip': {
    title: 'GET /v1/pets?limit=20, Accept-Encoding: gzip',
    method: 'GET',
    path: () => '/v1/pets?limit=20',
    headers: { 'accept-encoding': 'gzip' },
  },
  // The filters of GET /v1/pets: one category of the seven the seed spreads pets over, and a three-letter search.
  'list-category': { title: `GET ${CATEGORY_PATH}`, method: 'GET', path: () => CATEGORY_PATH },
  search: { title: `GET ${SEARCH_PATH}`, method: 'GET', path: () => SEARCH_PATH },
  'list-sold': {
    title: `GET ${BASELINE_PATH}`,
    method: 'GET',
    path: () => BASELINE_PATH,
    statement: () => ({ pick: (sql) => sql.listByStatus, values: ['sold', 0, LIST_ROWS] }),
  },
  post: {
    title: 'POST /v1/pets',
    method: 'POST',
    path: () => '/v1/pets',
    // As src/db/postgres/pets-store.ts sends it; created_at fixed when the suite starts.
    statement: () => ({
      pick: (sql) => `${sql.insert} RETURNING ${PET_COLUMNS}`,
      values: [POST_PET.name, POST_PET.categoryId, POST_PET.status, Date.now()],
    }),
  },
  get: {
    title: 'GET /v1/pets/{id}',
    method: 'GET',
    path: (pets) => `/v1/pets/${middlePet(pets)}`,
    statement: (pets) => ({ pick: (sql) => sql.byId, values: [middlePet(pets)] }),
  },
  order: {
    title: `POST ${ORDERS_PATH} (a different available pet each)`,
    method: 'POST',
    path: () => ORDERS_PATH,
    scenario: (firstPetId) => ({ kind: 'order', firstPetId }),
  },
  inventory: { title: 'GET /v1/store/inventory', method: 'GET', path: () => '/v1/store/inventory' },
  mixed: {
    title: `mixed: 9 in 10 GET ${BASELINE_PATH}, 1 in 10 reserve, complete or cancel an order`,
    method: 'GET',
    path: () => BASELINE_PATH,
    scenario: (firstPetId) => ({ kind: 'mixed', firstPetId, listPath: BASELINE_PATH }),
  },
  'mixed-name': {
    title: `mixed: 9 in 10 GET ${BY_NAME_PATH}, 1 in 10 reserve, complete or cancel an order`,
    method: 'GET',
    path: () => BY_NAME_PATH,
    scenario: (firstPetId) => ({ kind: 'mixed', firstPetId, listPath: BY_NAME_PATH }),
  },
}

interface Options {
  pets: number[]
  store: StoreKind
  durationS: number
  rounds: number
  connections: number
  only: EndpointId[]
  seed: 'api' | 'bulk' | undefined
  generator: Generator
  cpuProfDir: string | undefined
  against: string | undefined
  write: boolean
  /** pgbench runs the service's statements alone: on PostgreSQL, when installed. */
  pgbench: boolean
  /** A receiver subscribed to every event of this checkout's service (not of --against's). */
  webhook: boolean
  /** Where that service's webhooks are delivered from: its own process, a `petstore dispatch` beside it, or nowhere (what the writes alone pay). */
  dispatch: 'in-process' | 'process' | 'none'
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      pets: { type: 'string' },
      'compare-sizes': { type: 'boolean' },
      store: { type: 'string', default: 'sqlite' },
      duration: { type: 'string', default: '10' },
      rounds: { type: 'string', default: '2' },
      connections: { type: 'string', default: '50' },
      only: { type: 'string' },
      seed: { type: 'string' },
      generator: { type: 'string' },
      'cpu-prof': { type: 'string' },
      against: { type: 'string' },
      'no-write': { type: 'boolean' },
      webhook: { type: 'boolean' },
      dispatch: { type: 'string', default: 'in-process' },
      help: { type: 'boolean' },
    },
  })
  if (values.help) {
    console.log(USAGE)
    process.exit(0)
  }
  const positive = (name: string, raw: string) => {
    const n = Number(raw.replace(/_/g, ''))
    if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${raw}"`)
    return n
  }
  const oneOf = <T extends string>(name: string, raw: string | undefined, allowed: readonly T[]): T | undefined => {
    if (raw === undefined) return undefined
    if (!(allowed as readonly string[]).includes(raw)) throw new Error(`--${name} must be one of ${allowed.join(', ')}, got "${raw}"`)
    return raw as T
  }
  const ids = Object.keys(ENDPOINTS) as EndpointId[]
  const defaults = ids.filter((id) => (ALL_ENDPOINTS as readonly string[]).includes(id))
  const pets = values['compare-sizes'] ? '10000,1000000' : (values.pets ?? '10000')
  return {
    pets: pets.split(',').map((n) => positive('pets', n)).sort((a, b) => a - b),
    store: oneOf('store', values.store, ['sqlite', 'postgres'] as const)!,
    durationS: positive('duration', values.duration),
    rounds: positive('rounds', values.rounds),
    connections: positive('connections', values.connections),
    only: values.only ? values.only.split(',').map((id) => oneOf('only', id, ids)!) : defaults,
    seed: oneOf('seed', values.seed, ['api', 'bulk'] as const),
    generator: oneOf('generator', values.generator, ['wrk', 'autocannon'] as const) ?? detectGenerator(),
    cpuProfDir: values['cpu-prof'] && resolve(values['cpu-prof']),
    against: values.against === 'none' ? undefined : (values.against ?? REFERENCE_RELEASE),
    write: !values['no-write'],
    pgbench: values.store === 'postgres' && hasPgbench(),
    webhook: values.webhook === true,
    dispatch: oneOf('dispatch', values.dispatch, ['in-process', 'process', 'none'] as const)!,
  }
}

const log = (message: string) => console.error(`[bench] ${message}`)

// Everything a run leaves behind is undone here, newest first, however the run ends.
const cleanups: Array<() => Promise<void>> = []
async function cleanUp() {
  for (const undo of cleanups.splice(0).reverse()) await undo().catch((error: unknown) => log(`cleanup: ${String(error)}`))
}

/** One service under test: this checkout's, or the --against revision's, each on a store of its own. */
interface Target {
  /** '' for this checkout; the revision for --against. */
  rev: string
  store: TempStore
  service: { process: Pinned; url: string }
  key: string
  /** The unused part of the order pool, which the order and mixed runs reserve from in id order. */
  pool: { next: number; last: number; appended: number }
  /** The most reservations per second any run of an endpoint has made, to size the pool before the next. */
  reservationRate: Partial<Record<EndpointId, number>>
  /** How its service is started again (a fresh process each round). */
  env: NodeJS.ProcessEnv
  checkout: string
  /** With --webhook: the receiver subscribed to every event. */
  receiver: Receiver | undefined
}

async function startService(options: Options, env: NodeJS.ProcessEnv, checkout: string): Promise<{ process: Pinned; url: string }> {
  const port = await freePort()
  const nodeArgs = [...SERVICE_NODE_FLAGS, ...(options.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', options.cpuProfDir] : [])]
  const service = spawnPinned(SERVICE_CORE, process.execPath, [...nodeArgs, join(checkout, 'dist/server.js')], { ...env, PORT: String(port) })
  cleanups.push(() => stop(service))
  await waitForPort(port, service)
  return { process: service, url: `http://127.0.0.1:${port}` }
}

/** A store of its own, its schema made by the target's own command line (with the key), seeded, and the service started on it. */
async function startTarget(options: Options, dir: string, pets: number, against: Checkout | undefined): Promise<Target> {
  const rev = against?.rev ?? ''
  const checkout = against?.dir ?? '.'
  const store = await createTempStore(options.store, dir, `n${pets}${against ? '_against' : ''}`)
  cleanups.push(() => store.remove())
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: store.databaseUrl,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    PETSTORE_ENV: 'development',
    // As npm start runs it (package.json), whichever revision: glibc's malloc arenas at most 2.
    MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
    // Each target its own Redis keys: the two services' counters never meet.
    PETSTORE_REDIS_PREFIX: `petstore-bench-${process.pid}${against ? '-against' : ''}`,
  }
  delete env.REDIS_URL // only the postgres stack runs with Redis
  if (options.store === 'postgres') env.REDIS_URL = REDIS_URL
  const receiver = options.webhook && !against ? await startReceiver() : undefined
  if (receiver) {
    env.PETSTORE_WEBHOOK_ALLOW_CIDRS = '127.0.0.0/8'
    cleanups.push(() => receiver.close())
  }
  const key = await createEnterpriseKey(env, checkout)

  const seed = seedOf(options, pets)
  const seeding = Date.now()
  if (seed === 'bulk') await seedInBulk(store.databaseUrl, pets)
  if (receiver && options.dispatch !== 'in-process') env.PETSTORE_DISPATCH = 'off'
  if (receiver && options.dispatch === 'process') {
    // Background work: it takes what CPU the load generator leaves, never the service's core.
    const dispatcher = spawnPinned(GENERATOR_CORE, 'nice', ['-n', '19', process.execPath, ...SERVICE_NODE_FLAGS, join(checkout, 'dist/dispatch.js')], { ...env, PETSTORE_DISPATCH: 'on' })
    dispatcher.child.stdout!.resume() // its log is not read; a full pipe would stall it
    void dispatcher.exited.then((code) => log(`petstore dispatch ended (${String(code)}): ${dispatcher.stderr().trim()}`))
    cleanups.push(() => stop(dispatcher))
  }
  const service = await startService(options, env, checkout)
  if (seed === 'api') await seedThroughApi(service.url, key, pets)
  // Subscribed after the seeding: what is measured is the service delivering while it serves.
  if (receiver) await subscribe(service.url, key, receiver)
  log(`${rev ? `${rev}: ` : ''}${pets.toLocaleString('en')} pets seeded ${seed === 'api' ? 'through the API' : 'in bulk'} in ${((Date.now() - seeding) / 1000).toFixed(1)} s`)
  return { rev, store, service, key, receiver, pool: { next: 1, last: 0, appended: 0 }, reservationRate: {}, env, checkout }
}

const seedOf = (options: Options, pets: number) => options.seed ?? (pets <= SEED_THROUGH_API_MAX ? 'api' : 'bulk')

/**
 * Sizes the order pool from the run itself: before each order or mixed run, at least
 * twice what the fastest run of that endpoint so far reserved per second (for the
 * first, the warm-up, a generous guess), over the run's duration. Topped up while the
 * service is idle between runs (a fresh segment of consecutive ids, appended after
 * every pet the POST runs made): the list pages are read again after any commit, and
 * the inventory's counts follow any writer, so nothing the service keeps can miss it.
 */
async function ensurePool(target: Target, id: EndpointId, durationS: number): Promise<void> {
  const rate = target.reservationRate[id] ?? (id === 'order' ? ORDER_RATE_GUESS : MIXED_RESERVE_RATE_GUESS)
  const needed = Math.ceil(rate * 2 * durationS) + 1_000
  if (target.pool.last - target.pool.next + 1 >= needed) return
  const pooling = Date.now()
  const { first, last } = await seedOrderPool(target.store.databaseUrl, needed)
  Object.assign(target.pool, { next: first, last, appended: target.pool.appended + needed })
  log(`${target.rev ? `${target.rev}: ` : ''}order pool: ${needed.toLocaleString('en')} available pets (ids ${first}–${last}) in ${((Date.now() - pooling) / 1000).toFixed(1)} s`)
}

async function runSuite(options: Options, dir: string, pets: number, against: Checkout | undefined): Promise<SuiteResult> {
  const current = await startTarget(options, dir, pets, undefined)
  const other = against && (await startTarget(options, dir, pets, against))
  const targets = other ? [current, other] : [current]

  const captured = await captureResponse(current.service.url, current.key)
  let baseline = await startBaseline(captured, dir, SERVICE_CORE)
  cleanups.push(() => stop(baseline.process))

  const spec = (target: Target | undefined, id: EndpointId | undefined, durationS: number): LoadSpec => {
    const url = target?.service.url ?? baseline.url
    const auth = { authorization: `Bearer ${target?.key ?? current.key}` }
    const endpoint = id && ENDPOINTS[id]
    if (target && endpoint?.scenario) {
      // A scenario builds its own requests; each of its runs starts where the pool's unused pets do.
      return { url, method: endpoint.method, headers: auth, connections: options.connections, durationS, scenario: endpoint.scenario(target.pool.next), ...paced(target) }
    }
    return {
      url: endpoint ? `${url}${endpoint.path(pets)}` : `${url}${BASELINE_PATH}`,
      method: endpoint?.method ?? 'GET',
      headers: { ...auth, ...(endpoint?.method === 'POST' ? { 'content-type': 'application/json' } : {}), ...endpoint?.headers },
      ...(endpoint?.method === 'POST' ? { body: POST_BODY } : {}),
      connections: options.connections,
      durationS,
      ...paced(target),
    }
  }
  /** With a receiver subscribed, the service paces writes while its webhooks fall behind: its 503s are counted apart, and are no failure. */
  const paced = (target: Target | undefined) => (target?.receiver && options.dispatch === 'in-process' ? { countPaced: true } : {})
  /**
   * Waits until the service has sent every webhook it had to (none left to fan out, no
   * delivery pending: a lull at the receiver can be a long fan-out); returns when.
   */
  const caughtUp = async (target: Target, what: string): Promise<number> => {
    const from = Date.now()
    let analyzedAt = from
    while ((await webhooksToSend(target.store.databaseUrl)) > 0) {
      // What autovacuum would do as the outbox's tables grow, on a server where it runs (not this machine's).
      if (Date.now() - analyzedAt >= ANALYZE_EVERY_MS) {
        await target.store.analyzeOutbox()
        analyzedAt = Date.now()
      }
      const { child } = target.service.process
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${what}: the service exited (${String(child.exitCode ?? child.signalCode)}) with webhooks still to send: ${target.service.process.stderr().trim()}`)
      if (Date.now() - from > CATCH_UP_LIMIT_MS) throw new Error(`${what}: the dispatcher had not caught up ${CATCH_UP_LIMIT_MS / 1000} s after the run`)
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    return Date.now()
  }
  /** One run; a measured run that got any answer but a 2xx, or any connection error, fails the whole bench. */
  const load = async (target: Target | undefined, id: EndpointId | undefined, durationS: number, measured: boolean) => {
    if (target && id && ENDPOINTS[id].scenario) await ensurePool(target, id, durationS)
    const result = await runLoad(options.generator, spec(target, id, durationS), GENERATOR_CORE, dir)
    if (target && id && result.petsReserved !== undefined) {
      target.pool.next += result.petsReserved
      target.reservationRate[id] = Math.max(target.reservationRate[id] ?? 0, result.petsReserved / durationS)
    }
    if (measured && (result.non2xx - (result.paced ?? 0) > 0 || result.errors > 0)) {
      const what = `${target?.rev ? `${target.rev}: ` : ''}${id ? ENDPOINTS[id].title : 'baseline'}`
      throw new Error(
        `${what}: ${result.non2xx} answers outside 2xx and ${result.errors} connection errors in a measured run; ` +
          'a figure that counts refusals as served is no figure, so the run stops here',
      )
    }
    return result
  }

  // PostgreSQL alone: pgbench, as many clients as the generator has connections, on the
  // statement of each loaded endpoint that has one.
  const withStatement = options.store === 'postgres' ? options.only.filter((id) => ENDPOINTS[id].statement) : []
  const alone = (options.pgbench ? withStatement : []).map((id) => {
    const statement = ENDPOINTS[id].statement!(pets)
    const measured: PgbenchMeasured = { id, ...describeStatement(statement), runs: [] }
    return { statement, measured }
  })
  const pgbench = (statement: PgbenchStatement, durationS: number) =>
    runPgbench(statement, { databaseUrl: current.store.databaseUrl, clients: options.connections, durationS }, GENERATOR_CORE, dir)

  // Warm-up (JIT, caches) on every target, not counted.
  for (const target of targets) await target.store.settle()
  await load(undefined, undefined, WARMUP_S, false)
  for (const id of options.only) for (const target of targets) await load(target, id, WARMUP_S, false)
  for (const { statement } of alone) await pgbench(statement, WARMUP_S)

  // What the warm-up queued is delivered before anything is measured: a dispatcher
  // catching up on the service's core would slow the other revision's runs.
  if (current.receiver && options.dispatch !== 'none') await caughtUp(current, 'the warm-up')

  const peaks = new Map<Target, number>(targets.map((target) => [target, peakRss(target.service.process.pid)]))
  /**
   * Each round after the first, every service (and the baseline) is a fresh process on
   * the same store, warmed up again. One process runs faster or slower than another of the very same
   * build for its whole life (its heap's and code's layout): the same list measured
   * 0.96, then 1.12, of itself built as --against HEAD, in two invocations of 4 rounds,
   * each round of one consistent within ±4 %. A process a round averages that out; more
   * rounds within one process never do (docs/benchmarks.md, "One process, one draw").
   */
  const restartServices = async () => {
    await stop(baseline.process)
    baseline = await startBaseline(captured, dir, SERVICE_CORE)
    cleanups.push(() => stop(baseline.process))
    await load(undefined, undefined, RESTART_WARMUP_S, false)
    for (const target of targets) {
      peaks.set(target, Math.max(peaks.get(target)!, peakRss(target.service.process.pid)))
      await stop(target.service.process)
      target.service = await startService(options, target.env, target.checkout)
    }
    for (const id of options.only) for (const target of targets) await load(target, id, RESTART_WARMUP_S, false)
    if (current.receiver && options.dispatch !== 'none') await caughtUp(current, 'the warm-up after a restart')
  }
  const measure = async (row: Measured, target: Target | undefined) => {
    const pinned = target?.service.process ?? baseline.process
    for (const t of targets) await t.store.settle()
    if (target) peaks.set(target, Math.max(peaks.get(target)!, peakRss(pinned.pid)))
    const reset = resetPeakRss(pinned.pid)
    if (target?.receiver && row.id && ENDPOINTS[row.id].scenario) {
      // The pool's new pets are events too: delivered before the run, which measures the
      // writes with an endpoint subscribed, not with a bulk load's backlog to catch up on.
      await ensurePool(target, row.id, options.durationS)
      if (options.dispatch !== 'none') await caughtUp(target, 'the order pool')
    }
    const deliveredBefore = target?.receiver?.delivered ?? 0
    target?.receiver?.takeLatencies() // this run's deliveries are timed from here
    const cpuBefore = cpuSeconds(pinned.pid)
    // What autovacuum would do meanwhile (caughtUp does the same after the run).
    const vacuuming = target?.receiver ? setInterval(() => void target.store.analyzeOutbox().catch(() => {}), ANALYZE_EVERY_MS) : undefined
    const result = await load(target, row.id, options.durationS, true).finally(() => clearInterval(vacuuming))
    // Before the catch-up below: what the requests cost, not what delivering their webhooks did.
    result.cpuUsPerRequest = ((cpuSeconds(pinned.pid) - cpuBefore) * 1e6) / (result.requestsPerS * options.durationS)
    if (target?.receiver && options.dispatch !== 'none') {
      // The service's dispatcher gives way to requests that keep it busy, so most of a
      // saturating run's webhooks go after it: counted until it has caught up, for the
      // rate it delivers at, and before the next run, which must not share the core with it.
      const duringLoad = target.receiver.delivered - deliveredBefore
      const loadEnded = Date.now()
      const caughtUpAt = await caughtUp(target, row.title)
      const after = target.receiver.delivered - deliveredBefore - duringLoad
      // Every write of these runs makes an event the receiver takes: none delivered is a broken run, not a figure.
      if (duringLoad + after === 0) throw new Error(`${row.title}: the receiver was sent no webhook; is the dispatcher running?`)
      const catchUpS = Math.max(caughtUpAt - loadEnded, 1) / 1000
      // From each event's write to its arrival, over every delivery of the run and of its
      // catching up; the longest is the oldest any event got before it was delivered
      // (the lag bound: under a saturating load, never past 60 s).
      const latencies = target.receiver.takeLatencies()
      const p99Ms = percentile(latencies, 0.99)
      const maxMs = latencies.at(-1) ?? 0
      log(
        `${pets.toLocaleString('en')} pets, ${row.title}: ${duringLoad} webhooks delivered during the run (${(duringLoad / options.durationS).toFixed(0)}/s), ` +
          `${after} after it in ${catchUpS.toFixed(0)} s (${(after / catchUpS).toFixed(0)}/s), event to delivery p99 ${(p99Ms / 1000).toFixed(2)} s, the longest ${(maxMs / 1000).toFixed(2)} s`,
      )
      row.webhooks ??= { duringRunPerS: [], catchUpPerS: [], p99Ms: [], maxMs: [] }
      row.webhooks.duringRunPerS.push(duringLoad / options.durationS)
      row.webhooks.catchUpPerS.push(after / catchUpS)
      row.webhooks.p99Ms.push(p99Ms)
      row.webhooks.maxMs.push(maxMs)
    }
    row.runs.push(result)
    const peak = peakRss(pinned.pid)
    row.peakRss = reset ? Math.max(row.peakRss, peak) : peak
    if (target) peaks.set(target, Math.max(peaks.get(target)!, peak))
    const lists = result.listRequestsPerS === undefined ? '' : ` (its lists ${result.listRequestsPerS.toFixed(0)} req/s)`
    const pacedOut = result.paced ? `, of which ${(result.paced / options.durationS).toFixed(0)}/s refused 503 (writes paced)` : ''
    log(
      `${pets.toLocaleString('en')} pets, ${row.title}: ${result.requestsPerS.toFixed(0)} req/s${pacedOut}${lists}, p99 ${result.p99Ms.toFixed(2)} ms, ` +
        `${result.cpuUsPerRequest.toFixed(1)} µs CPU per request`,
    )
  }

  const measureAlone = async ({ statement, measured }: (typeof alone)[number]) => {
    await current.store.settle()
    const result = await pgbench(statement, options.durationS)
    measured.runs.push(result)
    log(
      `${pets.toLocaleString('en')} pets, pgbench on the statement of ${ENDPOINTS[measured.id].title}: ${result.tps.toFixed(0)} tps, ` +
        `latency avg ${result.latencyAverageMs.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms${result.failed ? `, ${result.failed} failed` : ''}`,
    )
  }

  const baselineRuns: Measured = { title: 'baseline (node:http, captured answer)', runs: [], peakRss: 0 }
  const rows = (target: Target): Measured[] =>
    options.only.map((id) => ({
      id,
      title: target.rev ? `${ENDPOINTS[id].title} @ ${target.rev}` : `${ENDPOINTS[id].title}${target.receiver ? ', a webhook subscribed' : ''}`,
      runs: [],
      peakRss: 0,
    }))
  const endpoints = rows(current)
  const againstEndpoints = other ? rows(other) : []
  for (let round = 0; round < options.rounds; round++) {
    if (round > 0) await restartServices()
    await measure(baselineRuns, undefined)
    // The endpoints' order turns by one each round, so that none always runs first
    // after the idle baseline: with the list always first, the category filter after
    // it measured 0.73–0.77 of it at 1,000,000 pets; turning, 0.90 (docs/benchmarks.md,
    // issue 37).
    // And with --against, which revision goes first turns each round: always first, this
    // checkout measured 0.86-0.90 of the very same code built as --against HEAD (list and
    // inventory, 3 rounds; docs/benchmarks.md, "The order of a pair").
    for (let k = 0; k < endpoints.length; k++) {
      const i = (k + round) % endpoints.length
      const pair: [Measured, Target][] = [[endpoints[i]!, current], ...(other ? [[againstEndpoints[i]!, other] as [Measured, Target]] : [])]
      if (round % 2 === 1) pair.reverse()
      for (const [row, target] of pair) await measure(row, target)
    }
    for (const statement of alone) await measureAlone(statement)
  }
  await measure(baselineRuns, undefined)

  await stop(baseline.process)
  for (const target of targets) await stop(target.service.process) // SIGTERM: the service drains, and --cpu-prof writes its profile
  const pgbenchRuns = withStatement.length === 0 ? undefined : options.pgbench ? alone.map((a) => a.measured) : ('not installed' as const)
  return {
    pets,
    seed: seedOf(options, pets),
    baseline: baselineRuns,
    endpoints,
    servicePeakRss: peaks.get(current)!,
    orderPool: current.pool.appended,
    pgbench: pgbenchRuns,
    ...(other && against ? { against: { rev: against.rev, commit: against.commit, endpoints: againstEndpoints, servicePeakRss: peaks.get(other)! } } : {}),
  }
}

async function main() {
  process.chdir(dirname(dirname(fileURLToPath(import.meta.url))))
  const argv = process.argv.slice(2)
  const options = parseOptions(argv)
  pinSelf(GENERATOR_CORE)
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bench-'))
  // Last resort on any exit: no child outlives the harness, no temp file stays.
  process.on('exit', () => {
    killAll()
    rmSync(dir, { recursive: true, force: true })
  })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: cleaning up`)
      killAll()
      void cleanUp().finally(() => process.exit(130))
    })
  }

  log(`generator ${options.generator}, store ${options.store}, ${options.durationS} s per run, ${options.rounds} rounds`)
  if (options.store === 'postgres' && !options.pgbench) log(PGBENCH_MISSING)
  const suites: SuiteResult[] = []
  let against: Checkout | undefined
  try {
    if (options.against) {
      against = await checkOut(options.against, join(dir, 'against'), log)
      log(`--against ${options.against}: commit ${against.commit.slice(0, 12)} built in ${against.dir}`)
    }
    for (const pets of options.pets) {
      suites.push(await runSuite(options, dir, pets, against))
      await cleanUp()
    }
  } finally {
    await cleanUp()
    await against?.remove()
  }

  const report: Report = {
    store: options.store,
    generator: options.generator,
    command: ['npm run bench', ...(argv.length ? ['--', ...argv] : [])].join(' '),
    durationS: options.durationS,
    connections: options.connections,
    suites,
    ...(options.webhook ? { webhook: options.dispatch } : {}),
  }
  console.log(render(report))
  if (options.write) {
    writeResults('bench/results.md', report)
    log('written to bench/results.md')
  }
}

main().catch((error: unknown) => {
  console.error(`[bench] failed: ${error instanceof Error ? error.message : String(error)}`)
  process.exitCode = 1
})
