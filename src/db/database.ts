// What every backend does to a database before it serves: apply the migrations, and
// answer a trivial query (health).
import { Migrator, sql, type Kysely } from 'kysely'
import type { Dialect } from './dialect.js'
import { migrationProvider } from './migrations/index.js'
import type { Database } from './schema.js'

export interface DatabaseHandle {
  dialect: Dialect
  db: Kysely<Database>
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
