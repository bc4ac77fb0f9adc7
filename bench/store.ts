// The store under test: a temp SQLite file or a fresh, uniquely named PostgreSQL
// database, an enterprise key that is never refused, and N seeded pets.
import { execFile } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { openDatabase } from '../test/helpers/database.js'

export type StoreKind = 'sqlite' | 'postgres'

export interface TempStore {
  databaseUrl: string
  /**
   * Before each measured run, service's or pgbench's alike: on PostgreSQL, VACUUM
   * ANALYZE, as pgbench itself does before a run unless told not to. Without it,
   * autovacuum and the planner's statistics catch up with the rows of the seeding or
   * of the previous run (every POST run adds 100,000 or more) during whichever run
   * comes next.
   */
  settle(): Promise<void>
  /**
   * PostgreSQL: VACUUM ANALYZE of the outbox's tables, as autovacuum would do as they
   * change (this machine's server runs with autovacuum off). A catching-up dispatcher's
   * tables grow from a few rows to hundreds of thousands; planned with the statistics of
   * when they were empty, its statements scanned the whole deliveries table; and every
   * claim and record leaves a dead entry at the head of the index the next claim reads.
   */
  analyzeOutbox(): Promise<void>
  /** Drops the database or deletes the file; safe to call twice. */
  remove(): Promise<void>
}

const POSTGRES_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres'
export const REDIS_URL = 'redis://127.0.0.1:6379'

export async function createTempStore(kind: StoreKind, dir: string, label: string): Promise<TempStore> {
  if (kind === 'sqlite') {
    const file = join(dir, `${label}.db`)
    return {
      databaseUrl: `sqlite:${file}`,
      settle: async () => {},
      analyzeOutbox: async () => {},
      remove: async () => {
        for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true })
      },
    }
  }
  // Lower case letters, digits and _ only: the name is spliced into SQL.
  const name = `petstore_bench_${process.pid}_${Date.now()}_${label}`.replace(/[^a-z0-9_]/g, '_')
  await query(POSTGRES_ADMIN_URL, `create database ${name}`)
  let removed = false
  const databaseUrl = `postgres://postgres@127.0.0.1:5432/${name}`
  return {
    databaseUrl,
    settle: () => query(databaseUrl, 'vacuum analyze'),
    analyzeOutbox: () => query(databaseUrl, 'vacuum analyze events, webhook_deliveries, webhook_attempts'),
    remove: async () => {
      if (removed) return
      removed = true
      // WITH (FORCE), PostgreSQL 13+: ends the sessions a killed service left open.
      await query(POSTGRES_ADMIN_URL, `drop database if exists ${name} with (force)`)
    },
  }
}

async function query(databaseUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000 })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

const run = promisify(execFile)

/**
 * Creates an enterprise key through the command line, as an operator would (it also
 * applies the migrations), with limits the benchmark can never reach.
 */
export async function createEnterpriseKey(env: NodeJS.ProcessEnv, checkout = '.'): Promise<string> {
  const { stdout } = await run(
    process.execPath,
    [join(checkout, 'bin/petstore.js'), 'keys', 'create', '--plan', 'enterprise', '--name', 'bench', '--per-minute', '1000000000', '--per-day', '1000000000000'],
    { env, timeout: 30_000 },
  )
  const key = stdout.split('\n')[0]?.trim()
  if (!key) throw new Error(`keys create printed no key: ${stdout}`)
  return key
}

const STATUSES = ['available', 'pending', 'sold'] as const

// Names of three syllables, picked by a hash of the pet's number: the three-letter
// search of the bench (`lun`) finds a few pets in a thousand, spread over the ids.
const SYLLABLES = ['lu', 'na', 'ma', 'ri', 'bo', 'ce', 'da', 'fi', 'go', 'ha', 'ki', 'lo', 'mi', 'no', 'pa', 'ru', 'sa', 'te', 'vi', 'zo']
function seedName(i: number): string {
  const h = Math.imul(i + 1, 2654435761) >>> 0
  const word = SYLLABLES[h % 20]! + SYLLABLES[(h >>> 8) % 20]! + SYLLABLES[(h >>> 16) % 20]!
  return `${word[0]!.toUpperCase()}${word.slice(1)} ${i + 1}`
}

/**
 * The i-th seeded pet (from 0): a third of the pets have each status, a seventh each
 * category of the seven a fresh database has.
 */
export function seedPet(i: number) {
  return { name: seedName(i), categoryId: 1 + (i % 7), status: STATUSES[i % 3]! }
}

/**
 * Inserts pets straight through the store's query layer, in multi-row batches, into a
 * database whose schema the service (or its command line) has already made: a build
 * of another revision (--against) must find only its own migrations applied.
 */
export async function seedInBulk(databaseUrl: string, count: number, pet: (i: number) => ReturnType<typeof seedPet> = seedPet): Promise<void> {
  const handle = openDatabase(databaseUrl)
  try {
    const now = Date.now()
    const BATCH = 2_000 // 8,000 bound values: under SQLite's 32,766 and PostgreSQL's 65,535
    for (let start = 0; start < count; start += BATCH) {
      const rows = []
      for (let i = start; i < Math.min(count, start + BATCH); i++) {
        const { name, categoryId, status } = pet(i)
        rows.push({ name, category_id: categoryId, status, created_at: now })
      }
      await handle.db.insertInto('pets').values(rows).execute()
    }
  } finally {
    await handle.db.destroy()
  }
}

/**
 * Appends `count` available pets, the pool the order runs reserve from one by one;
 * run it while no service writes, so that their ids follow each other. Returns the
 * first and last id.
 */
export async function seedOrderPool(databaseUrl: string, count: number): Promise<{ first: number; last: number }> {
  const maxId = async () => {
    const handle = openDatabase(databaseUrl)
    try {
      const row = await handle.db.selectFrom('pets').select((eb) => eb.fn.max('id').as('id')).executeTakeFirst()
      return Number(row?.id ?? 0)
    } finally {
      await handle.db.destroy()
    }
  }
  const before = await maxId()
  await seedInBulk(databaseUrl, count, (i) => ({ name: `Adoptable ${i + 1}`, categoryId: 1 + (i % 7), status: 'available' }))
  const last = await maxId()
  if (last - before !== count) throw new Error(`the order pool's ids are not consecutive: ${count} pets inserted after id ${before}, last id ${last}`)
  return { first: before + 1, last }
}

/** Creates pets through the API, as clients would, with a few requests in flight. */
export async function seedThroughApi(baseUrl: string, key: string, count: number): Promise<void> {
  let next = 0
  async function worker() {
    while (next < count) {
      const pet = seedPet(next++)
      const response = await fetch(`${baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(pet),
      })
      if (response.status !== 201) throw new Error(`seeding: POST /v1/pets answered ${response.status}: ${await response.text()}`)
    }
  }
  await Promise.all(Array.from({ length: 16 }, worker))
}

/** What the service has still to send: events not yet fanned out, and deliveries not yet made. */
export async function webhooksToSend(databaseUrl: string): Promise<number> {
  const handle = openDatabase(databaseUrl)
  try {
    const [events, deliveries] = await Promise.all([
      handle.db.selectFrom('events').select((eb) => eb.fn.countAll().as('n')).where('fan_out_pending', '=', 1).executeTakeFirstOrThrow(),
      handle.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow(),
    ])
    return Number(events.n) + Number(deliveries.n)
  } finally {
    await handle.db.destroy()
  }
}
