// The SQLite file: opened with the pragmas the service relies on, and Kysely over
// that one connection (the writer).
import { dirname, resolve } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { Kysely } from 'kysely'
import { makeFolders } from '../../folders.js'
import type { Database } from '../schema.js'
import { LOCK_WAIT_MS, LockWaitingSqliteDialect } from './lock-wait.js'

export interface SqliteConnection {
  /** The absolute path of the file, to open the reader connection on. */
  file: string
  /** The one connection Kysely runs on, for the prepared statements of the hot paths. */
  writer: SqliteDatabase.Database
  db: Kysely<Database>
}

export function openSqlite(path: string): SqliteConnection {
  const file = resolve(path)
  makeFolders(dirname(file))
  const writer = new SqliteDatabase(file)
  // WAL: readers never block the writer. synchronous=NORMAL in WAL mode makes a
  // commit durable against the process dying (kill -9): the WAL write is done
  // before the commit returns. (Against power loss it needs synchronous=FULL.)
  writer.pragma('journal_mode = WAL')
  writer.pragma('synchronous = NORMAL')
  // A WAL that grew while readers kept it from starting over (a long list's open
  // statement, sqlite/pets-store.ts) is cut back to this when it does, not kept at its
  // largest on disk.
  writer.pragma('journal_size_limit = 67108864')
  // The CLI and the server may write the same file at once. The statements of the
  // service wait for each other's lock asynchronously (lock-wait.ts); busy_timeout
  // remains for any that would not.
  writer.pragma(`busy_timeout = ${LOCK_WAIT_MS}`)
  // better-sqlite3's build already enforces foreign keys; said here so that the file
  // never depends on how SQLite was compiled (orders.pet_id, as on PostgreSQL).
  writer.pragma('foreign_keys = ON')
  return { file, writer, db: new Kysely<Database>({ dialect: new LockWaitingSqliteDialect(writer) }) }
}
