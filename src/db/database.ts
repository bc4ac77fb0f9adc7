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

export interface MigrationOptions {
  /**
   * `all` (the server, `petstore migrate`): apply every pending migration. `fresh` (the
   * other commands): only to a database that has none yet, so that `keys create` works
   * on a new database; a schema of an earlier release is refused
   * rather than upgraded under the servers of that release, which could not read it.
   */
  apply?: 'all' | 'fresh'
  /** Told the migrations about to be applied, before they run: on a large table they take a while. */
  onPending?: (names: readonly string[]) => void
  /** Told the migrations this process applied (none when another instance applied them meanwhile). */
  onApplied?: (names: readonly string[]) => void
}

/** What a start says before it applies migrations, which take a while on a large database (and block a SQLite process meanwhile). */
export const migratingMessage = (names: readonly string[]) =>
  `applying ${names.length} schema migration${names.length === 1 ? '' : 's'} (${names[0]}${names.length > 1 ? ` to ${names.at(-1)}` : ''}); on a large database this takes a while`

/** Applies pending migrations; returns the names applied. Safe to run from several processes at once. */
export async function migrate({ db, dialect }: DatabaseHandle, { apply = 'all', onPending, onApplied }: MigrationOptions = {}): Promise<string[]> {
  const provider = migrationProvider(dialect)
  const known = Object.keys(await provider.getMigrations()).sort()
  const applied = await appliedMigrations(db)
  const unknown = applied.filter((name) => !known.includes(name))
  if (unknown.length > 0) {
    // Kysely would call this "corrupted migrations"; it is a newer release's schema.
    const newer = unknown.filter((name) => name > known.at(-1)!)
    throw new Error(
      newer.length === unknown.length
        ? `the database's schema is newer than this petstore's: it has migration ${newer.at(-1)}, this release knows up to ${known.at(-1)}. Run the release that made it, or a later one`
        : `the database has migrations this petstore does not know (${unknown.join(', ')})`,
    )
  }
  const pending = known.filter((name) => !applied.includes(name))
  if (pending.length === 0) return []
  if (apply === 'fresh' && applied.length > 0) {
    throw new Error(
      `the database's schema is older than this petstore's (${pending.length} migration${pending.length === 1 ? '' : 's'} to apply, from ${pending[0]}): run \`petstore migrate\` to upgrade it (docs/operations.md, Upgrading)`,
    )
  }
  onPending?.(pending)
  const migrator = new Migrator({ db, provider })
  const { error, results } = await migrator.migrateToLatest()
  if (error) throw error instanceof Error ? error : new Error(`migration failed: ${String(error)}`)
  const done = (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
  onApplied?.(done)
  return done
}

/** The names of the migrations applied to the database; none before the first. */
async function appliedMigrations(db: Kysely<Database>): Promise<string[]> {
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true })
  if (!tables.some((table) => table.name === 'kysely_migration')) return []
  const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db)
  return rows.map((row) => row.name)
}

export async function ping(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db)
}
