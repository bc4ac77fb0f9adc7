// `npm run bench:dispatch`: one `petstore dispatch` process against a backlog, on each
// store: N events already waiting to be fanned out to one endpoint, or to each of
// `--endpoints` (a receiver on loopback that answers 204 at a path each), delivered
// until none is left or the time is up. One endpoint measures the rate to one
// receiver, which PETSTORE_WEBHOOK_PER_ENDPOINT (8 requests under way) bounds; several
// measure the dispatcher's own. It
// reports the deliveries per second and the dispatcher's peak RSS, sampled from /proc
// (the figures of docs/benchmarks.md). With --against REV, that revision is measured in
// the same run, store by store, before this checkout: the only comparison a shared
// machine allows.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import { numbered, openDatabase } from '../test/helpers/database.js'
import { createSecretBox, parseMainKey } from '../src/secrets/secret-box.js'
import { checkOut, type Checkout } from './against.js'
import { startReceiver } from './receiver.js'
import { SERVICE_NODE_FLAGS } from './processes.js'
import { createEnterpriseKey, createTempStore, type StoreKind } from './store.js'

const USAGE = `npm run bench:dispatch -- [options]
  --store sqlite|postgres|both   (both)
  --events N                     events waiting when the dispatcher starts (20000)
  --endpoints N                  endpoints taking every event, each its own path of the receiver (1)
  --seconds S                    stop after this long even if some are left (60)
  --per-endpoint N               PETSTORE_WEBHOOK_PER_ENDPOINT (the default, 8)
  --against REV                  measure REV too, before this checkout, in the same run
  --rounds N                     runs of each revision on each store, which goes first turning each round (1)
  --cpu-prof DIR                 run each dispatcher with --cpu-prof, writing its profile to DIR`

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'both' },
    events: { type: 'string', default: '20000' },
    endpoints: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '60' },
    'per-endpoint': { type: 'string' },
    against: { type: 'string' },
    'cpu-prof': { type: 'string' },
    rounds: { type: 'string', default: '1' },
    help: { type: 'boolean' },
  },
})
if (values.help) {
  console.log(USAGE)
  process.exit(0)
}
const stores: StoreKind[] = values.store === 'both' ? ['sqlite', 'postgres'] : [values.store as StoreKind]
const events = Number(values.events)
const seconds = Number(values.seconds)
const endpoints = Number(values.endpoints)
const rounds = Number(values.rounds)
/** Deliveries to make: each event to each endpoint. */
const deliveries = events * endpoints
if (!stores.every((store) => store === 'sqlite' || store === 'postgres') || !(events > 0) || !(seconds > 0) || !Number.isInteger(endpoints) || !(endpoints >= 1) || !Number.isInteger(rounds) || !(rounds >= 1)) {
  console.error(USAGE)
  process.exit(2)
}
/** SIGTERM lets the dispatcher exit on its own, so --cpu-prof writes the profile. */
const profiling = values['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', resolve(values['cpu-prof'])] : []
/** A main key of the run's own: the endpoint's secret is sealed with it, and the dispatcher opens it. */
const SECRET_KEY = Buffer.alloc(32, 7).toString('base64')

interface Result {
  delivered: number
  perS: number
  firstMs: number | undefined
  peakRssMb: number
}

/** Waiting events and `endpoints` endpoints taking them all, in a database the checkout's command line has migrated. */
async function prepare(databaseUrl: string, receiverUrl: string, checkout: string): Promise<void> {
  await createEnterpriseKey({ ...process.env, DATABASE_URL: databaseUrl, PETSTORE_SECRET_KEY: SECRET_KEY, LOG_LEVEL: 'warn' }, checkout)
  const { db, dialect } = openDatabase(databaseUrl)
  try {
    const { account_id } = await db.selectFrom('api_keys').select('account_id').executeTakeFirstOrThrow()
    const now = Date.now()
    const secret = createSecretBox(parseMainKey(SECRET_KEY)).seal(`whsec_${Buffer.alloc(24, 1).toString('base64')}`)
    for (let i = 1; i <= endpoints; i++) {
      const url = endpoints === 1 ? receiverUrl : `${receiverUrl}${i}`
      await db.insertInto('webhook_endpoints').values({ account_id, url, description: 'bench:dispatch', enabled_events: '*', secret, created_at: now }).execute()
    }
    const data = JSON.stringify({ id: 1, name: 'Bench', categoryId: 1, status: 'available', createdAt: new Date(now).toISOString() })
    // In steps of 100,000 rows: one statement each, a series made by the database.
    for (let done = 0; done < events; done += 100_000) {
      const n = Math.min(100_000, events - done)
      const { prefix, rows } = numbered(dialect, n)
      await sql`${sql.raw(prefix)} insert into events (type, account_id, data, created_at, fan_out_pending) select 'pet.created', null, ${data}, ${now}, 1 from ${sql.raw(rows)}`.execute(db)
    }
    // No ANALYZE: statistics saying the deliveries table is empty, while the fan-out
    // fills it, would lead PostgreSQL's planner to plans no service running for a while has.
  } finally {
    await db.destroy()
  }
}

function rssBytes(pid: number): number {
  try {
    return Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024
  } catch {
    return 0
  }
}

async function measure(kind: StoreKind, checkout: string, label: string): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-bench-dispatch-'))
  const store = await createTempStore(kind, dir, label)
  const receiver = await startReceiver()
  try {
    await prepare(store.databaseUrl, receiver.url, checkout)
    const env = {
      ...process.env,
      DATABASE_URL: store.databaseUrl,
      PETSTORE_SECRET_KEY: SECRET_KEY,
      PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
      LOG_LEVEL: 'warn',
      ...(values['per-endpoint'] ? { PETSTORE_WEBHOOK_PER_ENDPOINT: values['per-endpoint'] } : {}),
    }
    const started = performance.now()
    const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...profiling, join(checkout, 'dist/dispatch.js')], { env, stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)))
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    let peak = 0
    let firstMs: number | undefined
    let lastAt = started
    let last = 0
    const deadline = started + seconds * 1000
    while (receiver.delivered < deliveries && performance.now() < deadline && child.exitCode === null) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      peak = Math.max(peak, rssBytes(child.pid!))
      if (firstMs === undefined && receiver.delivered > 0) firstMs = performance.now() - started
      if (receiver.delivered !== last) {
        last = receiver.delivered
        lastAt = performance.now()
      }
    }
    if (child.exitCode !== null) throw new Error(`the dispatcher exited: ${stderr}`)
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
    // The rate from the first delivery to the last: the process's start and the fan-out's first batch are not delivery.
    const span = (lastAt - started - (firstMs ?? 0)) / 1000
    return { delivered: receiver.delivered, perS: span > 0 ? receiver.delivered / span : 0, firstMs, peakRssMb: peak / 2 ** 20 }
  } finally {
    await receiver.close()
    await store.remove()
    rmSync(dir, { recursive: true, force: true })
  }
}

const checkouts: { title: string; dir: string; checkout?: Checkout }[] = []
if (values.against) {
  const checkout = await checkOut(values.against, mkdtempSync(join(tmpdir(), 'petstore-against-')), console.error)
  checkouts.push({ title: `${values.against} (${checkout.commit.slice(0, 7)})`, dir: checkout.dir, checkout })
}
checkouts.push({ title: 'this checkout', dir: '.' })
const lines = ['| Store | Revision | Delivered | Deliveries/s | First delivery | Peak RSS |', '|---|---|---:|---:|---:|---:|']
/** Each store's rates by revision, over the rounds. */
const rates = new Map<string, number[]>()
try {
  for (let round = 0; round < rounds; round++) {
    for (const kind of stores) {
      // Which revision goes first turns each round: on this machine the second of a pair
      // ran a few per cent slower, whichever it was.
      const order = round % 2 === 0 ? [...checkouts.entries()] : [...checkouts.entries()].reverse()
      for (const [i, { title, dir }] of order) {
        const result = await measure(kind, dir, `dispatch_${i}`)
        const line = `| ${kind} | ${title} | ${result.delivered.toLocaleString('en')} of ${deliveries.toLocaleString('en')} | ${result.perS.toFixed(0)} | ${result.firstMs === undefined ? '–' : `${(result.firstMs / 1000).toFixed(2)} s`} | ${result.peakRssMb.toFixed(0)} MB |`
        console.error(line)
        lines.push(line)
        const key = `${kind}\t${title}`
        rates.set(key, [...(rates.get(key) ?? []), result.perS])
      }
    }
  }
} finally {
  for (const { checkout } of checkouts) await checkout?.remove()
}
const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length
if (rounds > 1 || checkouts.length > 1) {
  lines.push('', '| Store | Revision | Mean deliveries/s | This checkout over it |', '|---|---|---:|---:|')
  for (const kind of stores) {
    const ours = mean(rates.get(`${kind}\tthis checkout`) ?? [])
    for (const { title } of checkouts) {
      const theirs = mean(rates.get(`${kind}\t${title}`) ?? [])
      lines.push(`| ${kind} | ${title} | ${theirs.toFixed(0)} | ${title === 'this checkout' ? '–' : (ours / theirs).toFixed(2)} |`)
    }
  }
}
console.log(lines.join('\n'))
