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
import { BASELINE_PATH, captureResponse, startBaseline } from './baseline.js'
import { detectGenerator, runLoad, type Generator, type LoadSpec } from './load.js'
import { describeStatement, hasPgbench, PGBENCH_MISSING, runPgbench, type PgbenchStatement } from './pgbench.js'
import { freePort, killAll, peakRss, resetPeakRss, spawnPinned, stop, waitForPort, type Pinned } from './processes.js'
import { render, writeResults, type EndpointId, type Measured, type PgbenchMeasured, type Report, type SuiteResult } from './report.js'
import { ORDERS_PATH, type Scenario } from './scenarios.js'
import { createEnterpriseKey, createTempStore, REDIS_URL, seedInBulk, seedOrderPool, seedThroughApi, type StoreKind } from './store.js'

const USAGE = `npm run bench -- [options]
  --pets N[,N…]         pets to seed, one suite per size (default 10000)
  --compare-sizes       same as --pets 10000,1000000
  --store sqlite|postgres   (default sqlite; postgres also sets REDIS_URL, and runs
                        pgbench, when installed, on the statements of list, list-sold,
                        post and get: PostgreSQL alone, on the same database)
  --duration S          seconds per run (default 10)
  --rounds R            B S… rounds; a last baseline run closes them (default 2)
  --connections C       (default 50)
  --only ID[,ID…]       endpoints to load: list, list-sold, post, get, order, inventory,
                        mixed (default all)
  --seed api|bulk       (default: api up to 10000 pets, bulk above)
  --generator wrk|autocannon   (default: wrk when installed)
  --cpu-prof DIR        run the service with --cpu-prof, writing the profile to DIR
  --no-write            print the table only; leave bench/results.md alone`

const SERVICE_CORE = 0
const GENERATOR_CORE = 1
// Warm-up per target, not counted. The first second of load on a fresh process stalls
// its event loop for up to 300 ms (V8's compiler threads share the pinned core), and
// the first seconds of creates ran slower than the next (bench/results.md, seventh pass).
const WARMUP_S = 5
const SEED_THROUGH_API_MAX = 10_000
const POST_PET = { name: 'Bench', categoryId: 7, status: 'pending' } as const
const POST_BODY = JSON.stringify(POST_PET)
// What a list route asks the store for: ?limit=20, plus one to learn whether a next page exists.
const LIST_ROWS = 21
const middlePet = (pets: number) => Math.max(1, Math.ceil(pets / 2))
// The order pool's size: enough for the order runs at up to this many reservations per
// second (POST /v1/pets, a lighter write, peaked near 24,000 here), and the mixed runs
// at up to this many (one request in twenty reserves). Past the pool, reservations
// answer 404 and show as non-2xx.
const ORDER_RATE_MAX = 25_000
const MIXED_RESERVE_RATE_MAX = 3_000

interface Endpoint {
  title: string
  method: 'GET' | 'POST'
  path: (pets: number) => string
  /** Requests that differ from one to the next, reserving pets of the order pool. */
  scenario?: (firstPetId: number) => Scenario
  /** The statement the service runs for a request, for pgbench to run alone on PostgreSQL. */
  statement?: (pets: number) => PgbenchStatement
}

const ENDPOINTS: Record<EndpointId, Endpoint> = {
  list: {
    title: 'GET /v1/pets?limit=20',
    method: 'GET',
    path: () => '/v1/pets?limit=20',
    statement: () => ({ pick: (sql) => sql.listAll, values: [0, LIST_ROWS] }),
  },
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
  write: boolean
  /** pgbench runs the service's statements alone: on PostgreSQL, when installed. */
  pgbench: boolean
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
      'no-write': { type: 'boolean' },
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
  const pets = values['compare-sizes'] ? '10000,1000000' : (values.pets ?? '10000')
  return {
    pets: pets.split(',').map((n) => positive('pets', n)).sort((a, b) => a - b),
    store: oneOf('store', values.store, ['sqlite', 'postgres'] as const)!,
    durationS: positive('duration', values.duration),
    rounds: positive('rounds', values.rounds),
    connections: positive('connections', values.connections),
    only: values.only ? values.only.split(',').map((id) => oneOf('only', id, ids)!) : ids,
    seed: oneOf('seed', values.seed, ['api', 'bulk'] as const),
    generator: oneOf('generator', values.generator, ['wrk', 'autocannon'] as const) ?? detectGenerator(),
    cpuProfDir: values['cpu-prof'] && resolve(values['cpu-prof']),
    write: !values['no-write'],
    pgbench: values.store === 'postgres' && hasPgbench(),
  }
}

const log = (message: string) => console.error(`[bench] ${message}`)

// Everything a run leaves behind is undone here, newest first, however the run ends.
const cleanups: Array<() => Promise<void>> = []
async function cleanUp() {
  for (const undo of cleanups.splice(0).reverse()) await undo().catch((error: unknown) => log(`cleanup: ${String(error)}`))
}

async function startService(options: Options, env: NodeJS.ProcessEnv): Promise<{ process: Pinned; url: string }> {
  const port = await freePort()
  const nodeArgs = options.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', options.cpuProfDir] : []
  const service = spawnPinned(SERVICE_CORE, process.execPath, [...nodeArgs, 'dist/server.js'], { ...env, PORT: String(port) })
  cleanups.push(() => stop(service))
  await waitForPort(port, service)
  return { process: service, url: `http://127.0.0.1:${port}` }
}

/** Pets the order pool needs for every order and mixed run of a suite, warm-ups included. */
function orderPoolSize(options: Options): number {
  const seconds = WARMUP_S + options.durationS * options.rounds
  return (options.only.includes('order') ? ORDER_RATE_MAX * seconds : 0) + (options.only.includes('mixed') ? MIXED_RESERVE_RATE_MAX * seconds : 0)
}

async function runSuite(options: Options, dir: string, pets: number): Promise<SuiteResult> {
  const store = await createTempStore(options.store, dir, `n${pets}`)
  cleanups.push(() => store.remove())
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: store.databaseUrl,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    PETSTORE_ENV: 'development',
  }
  delete env.REDIS_URL // only the postgres stack runs with Redis
  if (options.store === 'postgres') env.REDIS_URL = REDIS_URL
  const key = await createEnterpriseKey(env)

  const seed = options.seed ?? (pets <= SEED_THROUGH_API_MAX ? 'api' : 'bulk')
  const seeding = Date.now()
  if (seed === 'bulk') await seedInBulk(store.databaseUrl, pets)
  let service = await startService(options, env)
  if (seed === 'api') await seedThroughApi(service.url, key, pets)
  log(`${pets.toLocaleString('en')} pets seeded ${seed === 'api' ? 'through the API' : 'in bulk'} in ${((Date.now() - seeding) / 1000).toFixed(1)} s`)

  // The order pool goes after the seeded pets, so that the pets the mixed runs sell
  // never enter the first page of sold pets that they list. It is written while no
  // service runs: no cache or counter of the service can miss it.
  const poolSize = orderPoolSize(options)
  const pool = { next: 1, last: 0 }
  let seedingPeak = 0 // of the process that served the seeding, when the pool restarts the service
  if (poolSize > 0) {
    const pooling = Date.now()
    seedingPeak = peakRss(service.process.pid)
    await stop(service.process)
    Object.assign(pool, await seedOrderPool(store.databaseUrl, poolSize).then(({ first, last }) => ({ next: first, last })))
    service = await startService(options, env)
    log(`order pool: ${poolSize.toLocaleString('en')} available pets (ids ${pool.next}–${pool.last}) in ${((Date.now() - pooling) / 1000).toFixed(1)} s`)
  }

  const baseline = await startBaseline(await captureResponse(service.url, key), dir, SERVICE_CORE)
  cleanups.push(() => stop(baseline.process))

  const auth = { authorization: `Bearer ${key}` }
  const spec = (url: string, id: EndpointId | undefined, durationS: number): LoadSpec => {
    const endpoint = id && ENDPOINTS[id]
    if (endpoint?.scenario) {
      // A scenario builds its own requests; each of its runs starts where the pool's unused pets do.
      return { url, method: endpoint.method, headers: auth, connections: options.connections, durationS, scenario: endpoint.scenario(pool.next) }
    }
    return {
      url: endpoint ? `${url}${endpoint.path(pets)}` : `${url}${BASELINE_PATH}`,
      method: endpoint?.method ?? 'GET',
      headers: endpoint?.method === 'POST' ? { ...auth, 'content-type': 'application/json' } : auth,
      ...(endpoint?.method === 'POST' ? { body: POST_BODY } : {}),
      connections: options.connections,
      durationS,
    }
  }
  const load = async (url: string, id: EndpointId | undefined, durationS: number) => {
    const result = await runLoad(options.generator, spec(url, id, durationS), GENERATOR_CORE, dir)
    if (result.petsReserved !== undefined) {
      pool.next += result.petsReserved
      if (pool.next > pool.last + 1) log(`the order pool ran out (${pool.next - pool.last - 1} reservations past it answered 404): raise ORDER_RATE_MAX in bench/run.ts`)
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
    runPgbench(statement, { databaseUrl: store.databaseUrl, clients: options.connections, durationS }, GENERATOR_CORE, dir)

  // Warm-up (JIT, caches) on every target, not counted.
  await store.settle()
  await load(baseline.url, undefined, WARMUP_S)
  for (const id of options.only) await load(service.url, id, WARMUP_S)
  for (const { statement } of alone) await pgbench(statement, WARMUP_S)

  let servicePeak = Math.max(seedingPeak, peakRss(service.process.pid))
  const measure = async (target: Measured, pinned: Pinned, url: string) => {
    if (pinned === service.process) servicePeak = Math.max(servicePeak, peakRss(pinned.pid))
    await store.settle()
    const reset = resetPeakRss(pinned.pid)
    const result = await load(url, target.id, options.durationS)
    target.runs.push(result)
    const peak = peakRss(pinned.pid)
    target.peakRss = reset ? Math.max(target.peakRss, peak) : peak
    if (pinned === service.process) servicePeak = Math.max(servicePeak, peak)
    const lists = result.listRequestsPerS === undefined ? '' : ` (its lists ${result.listRequestsPerS.toFixed(0)} req/s)`
    log(`${pets.toLocaleString('en')} pets, ${target.title}: ${result.requestsPerS.toFixed(0)} req/s${lists}, p99 ${result.p99Ms.toFixed(2)} ms`)
  }

  const measureAlone = async ({ statement, measured }: (typeof alone)[number]) => {
    await store.settle()
    const result = await pgbench(statement, options.durationS)
    measured.runs.push(result)
    log(
      `${pets.toLocaleString('en')} pets, pgbench on the statement of ${ENDPOINTS[measured.id].title}: ${result.tps.toFixed(0)} tps, ` +
        `latency avg ${result.latencyAverageMs.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms${result.failed ? `, ${result.failed} failed` : ''}`,
    )
  }

  const baselineRuns: Measured = { title: 'baseline (node:http, captured answer)', runs: [], peakRss: 0 }
  const endpoints: Measured[] = options.only.map((id) => ({ id, title: ENDPOINTS[id].title, runs: [], peakRss: 0 }))
  for (let round = 0; round < options.rounds; round++) {
    await measure(baselineRuns, baseline.process, baseline.url)
    for (const target of endpoints) await measure(target, service.process, service.url)
    for (const statement of alone) await measureAlone(statement)
  }
  await measure(baselineRuns, baseline.process, baseline.url)

  await stop(baseline.process)
  await stop(service.process) // SIGTERM: the service drains, and --cpu-prof writes its profile
  const pgbenchRuns = withStatement.length === 0 ? undefined : options.pgbench ? alone.map((a) => a.measured) : ('not installed' as const)
  return { pets, seed, baseline: baselineRuns, endpoints, servicePeakRss: servicePeak, orderPool: poolSize, pgbench: pgbenchRuns }
}

async function main() {
  process.chdir(dirname(dirname(fileURLToPath(import.meta.url))))
  const argv = process.argv.slice(2)
  const options = parseOptions(argv)
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
  try {
    for (const pets of options.pets) {
      suites.push(await runSuite(options, dir, pets))
      await cleanUp()
    }
  } finally {
    await cleanUp()
  }

  const report: Report = {
    store: options.store,
    generator: options.generator,
    command: ['npm run bench', ...(argv.length ? ['--', ...argv] : [])].join(' '),
    durationS: options.durationS,
    connections: options.connections,
    suites,
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
