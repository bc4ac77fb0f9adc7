// The database behind a URL as Kysely sees it, and its migrations: what the store
// opens first (open-store.ts), and what tools and tests use to look at the tables.
import { Migrator, sql, type Kysely } from 'kysely'
import type { Dialect } from './dialect.js'
import { migrationProvider } from './migrations/index.js'
import type { Database } from './schema.js'
import { openPostgres, type PostgresPoolOptions } from './postgres/connection.js'
import { openSqlite } from './sqlite/connection.js'

export interface DatabaseHandle {
  dialect: Dialect
  db: Kysely<Database>
}

/** Kysely over the database at `url` (`sqlite:<path>` or a PostgreSQL URL); `db.destroy()` closes it. */
export function openDatabase(url: string, options: PostgresPoolOptions = {}): DatabaseHandle {
  if (url.startsWith('sqlite:')) return { dialect: 'sqlite', db: openSqlite(url.slice('sqlite:'.length)).db }
  return { dialect: 'postgres', db: openPostgres(url, options).db }
}

/** Applies pending migrations; returns the names applied. Safe to run from several processes at once. */
export async function migrate({ db, dialect }: DatabaseHandle): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider(dialect) })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(`migration failed: ${String(error)}`)
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
}

export async function ping(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db)
}
