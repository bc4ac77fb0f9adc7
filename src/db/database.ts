// Opens the store named by DATABASE_URL: SQLite on disk or PostgreSQL, behind one
// Kysely query layer, with migrations applied before anything else touches it.
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import pg from 'pg'
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely'
import type { Database } from './schema.js'
import { migrationProvider } from './migrations/index.js'

export type Dialect = 'sqlite' | 'postgres'

export type DatabaseHandle =
  | {
      dialect: 'sqlite'
      db: Kysely<Database>
      /** The file and the one connection Kysely runs on, for the pets' hot path (sqlite-pets-store.ts). */
      sqlite: { file: string; connection: SqliteDatabase.Database }
      pool?: undefined
    }
  | {
      dialect: 'postgres'
      db: Kysely<Database>
      /** Kysely's pool, for the pets' hot path (postgres-pets-store.ts). */
      pool: pg.Pool
      sqlite?: undefined
    }

export function openDatabase(url: string, onIdleError: (error: Error) => void = () => {}): DatabaseHandle {
  if (url.startsWith('sqlite:')) return { dialect: 'sqlite', ...openSqlite(url.slice('sqlite:'.length)) }
  return { dialect: 'postgres', ...openPostgres(url, onIdleError) }
}

function openSqlite(path: string) {
  const file = resolve(path)
  mkdirSync(dirname(file), { recursive: true })
  const sqlite = new SqliteDatabase(file)
  // WAL: readers never block the writer. synchronous=NORMAL in WAL mode makes a
  // commit durable against the process dying (kill -9): the WAL write is done
  // before the commit returns. (Against power loss it needs synchronous=FULL.)
  sqlite.pragma('journal_mode = WAL')
  sqlite.pragma('synchronous = NORMAL')
  // The CLI and the server may write the same file at once.
  sqlite.pragma('busy_timeout = 5000')
  // better-sqlite3's build already enforces foreign keys; said here so that the file
  // never depends on how SQLite was compiled (orders.pet_id, as on PostgreSQL).
  sqlite.pragma('foreign_keys = ON')
  return { db: new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) }), sqlite: { file, connection: sqlite } }
}

// int8 (bigint) is returned as a string by default; our ids and times are safe integers.
const INT8_OID = 20
const int8AsNumber = (value: string) => Number(value)

// No request may hang on a dead or stuck database: bounded waits for a connection
// and for each statement. Four connections: reads are shared per turn and creates go
// one multi-row INSERT at a time, so more connections only meant more PostgreSQL
// backends fighting for the same cores (bench/results.md, fifth pass: POST 1.01–1.06
// of pgbench with 4, 0.80–0.82 with 10, in three pairs of runs).
const POOL_SIZE = 4
const CONNECT_TIMEOUT_MS = 2_000
const STATEMENT_TIMEOUT_MS = 5_000

function openPostgres(url: string, onIdleError: (error: Error) => void) {
  const pool = new pg.Pool({
    connectionString: url,
    max: POOL_SIZE,
    // Once open, a connection stays open: pg-pool would close it after 10 s idle, and
    // the first requests after every quiet spell paid for new connections and cold
    // backends (bench/results.md, seventh pass). TCP keepalive keeps it known to be alive.
    min: POOL_SIZE,
    keepAlive: true,
    keepAliveInitialDelayMillis: 60_000,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: STATEMENT_TIMEOUT_MS + 1_000,
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID ? int8AsNumber : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  })
  // A server restart kills idle connections; the pool drops them and opens new
  // ones on demand. Unhandled, this event would end the process.
  pool.on('error', onIdleError)
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), pool }
}

// PostgreSQL SQLSTATEs for a lost or refused connection (class 08, admin shutdown,
// crash shutdown, cannot connect now), Node's socket errors, SQLite's busy/locked,
// and Kysely's answer once the store is closed (an instance shutting down).
const UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'SQLITE_BUSY', 'SQLITE_LOCKED'])
const UNAVAILABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout|Connection closed|driver has already been destroyed/

/** True for errors that mean the database cannot be reached right now, not a bug: answered 503. */
export function isStoreUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true
  return UNAVAILABLE_MESSAGES.test(error.message)
}

/** Applies pending migrations; returns the names applied. Safe to run from several processes at once. */
export async function migrate(handle: DatabaseHandle): Promise<string[]> {
  const migrator = new Migrator({ db: handle.db, provider: migrationProvider(handle.dialect) })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(`migration failed: ${String(error)}`)
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

export async function ping(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db)
}

/** True for a unique constraint refusing a row (SQLite's SQLITE_CONSTRAINT_UNIQUE, PostgreSQL's 23505). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505'
}
