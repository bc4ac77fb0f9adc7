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

export interface DatabaseHandle {
  dialect: Dialect
  db: Kysely<Database>
}

export function openDatabase(url: string): DatabaseHandle {
  if (url.startsWith('sqlite:')) return { dialect: 'sqlite', db: openSqlite(url.slice('sqlite:'.length)) }
  return { dialect: 'postgres', db: openPostgres(url) }
}

function openSqlite(path: string): Kysely<Database> {
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
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) })
}

// int8 (bigint) is returned as a string by default; our ids and times are safe integers.
const INT8_OID = 20
const int8AsNumber = (value: string) => Number(value)

function openPostgres(url: string): Kysely<Database> {
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: 5_000,
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID ? int8AsNumber : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  })
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
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
