// Kysely over a database URL, beside the store rather than through it: how tests (and
// the bench) look at the tables as another process would, or fill a database as the
// previous release did. The service itself only ever opens a store (src/db/open-store.ts).
import type { DatabaseHandle } from '../../src/db/database.js'
import type { Dialect } from '../../src/db/dialect.js'
import { openPostgres, type PostgresPoolOptions } from '../../src/db/postgres/connection.js'
import { openSqlite } from '../../src/db/sqlite/connection.js'

export type { DatabaseHandle }

/** Kysely over the database at `url` (`sqlite:<path>` or a PostgreSQL URL); `db.destroy()` closes it. */
export function openDatabase(url: string, options: PostgresPoolOptions = {}): DatabaseHandle {
  if (url.startsWith('sqlite:')) return { dialect: 'sqlite', db: openSqlite(url.slice('sqlite:'.length)).db }
  return { dialect: 'postgres', db: openPostgres(url, options).db }
}

/**
 * Rows numbered `i` from 1 to `n`, to insert from in SQL: `prefix` goes before the
 * INSERT, `rows` after its FROM (SQLite has no generate_series).
 */
export function numbered(dialect: Dialect, n: number): { prefix: string; rows: string } {
  return dialect === 'sqlite' ? { prefix: `with recursive n (i) as (select 1 union all select i + 1 from n where i < ${n})`, rows: 'n' } : { prefix: '', rows: `generate_series(1, ${n}) n (i)` }
}
