// Kysely over a database URL, beside the store rather than through it: how tests (and
// the bench) look at the tables as another process would, or fill a database as the
// previous release did. The service itself only ever opens a store (src/db/open-store.ts).
import type { DatabaseHandle } from '../../src/db/database.js'
import { openPostgres, type PostgresPoolOptions } from '../../src/db/postgres/connection.js'
import { openSqlite } from '../../src/db/sqlite/connection.js'

export type { DatabaseHandle }

/** Kysely over the database at `url` (`sqlite:<path>` or a PostgreSQL URL); `db.destroy()` closes it. */
export function openDatabase(url: string, options: PostgresPoolOptions = {}): DatabaseHandle {
  if (url.startsWith('sqlite:')) return { dialect: 'sqlite', db: openSqlite(url.slice('sqlite:'.length)).db }
  return { dialect: 'postgres', db: openPostgres(url, options).db }
}
