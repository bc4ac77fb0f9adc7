// Waiting for another process's SQLite write lock (the CLI, `petstore dispatch`)
// without stopping this one. busy_timeout sleeps inside the synchronous call, and
// with it every request of the server for up to 5 s; here the call is tried with
// busy_timeout 0 and, while the lock is held, tried again after a timer, so that the
// event loop goes on. The group commit's BEGIN IMMEDIATE (batching/group-commit.ts)
// waits this way; so does every statement Kysely runs on the writer connection.
import type SqliteDatabase from 'better-sqlite3'
import { SqliteDialect, type DatabaseConnection, type Driver } from 'kysely'
import { withStatementCache } from './statement-cache.js'

/** How long a statement waits for another process's write lock before it fails (as busy_timeout would). */
export const LOCK_WAIT_MS = 5_000

/** Runs `attempt` until it does not fail with SQLITE_BUSY, or LOCK_WAIT_MS have passed, waiting between tries without blocking. */
export async function withoutBusyWait<T>(writer: SqliteDatabase.Database, attempt: () => Promise<T> | T): Promise<T> {
  const deadline = Date.now() + LOCK_WAIT_MS
  for (;;) {
    // exec, not pragma(): about 1 µs. SQLite reads busy_timeout when a statement runs.
    writer.exec('PRAGMA busy_timeout = 0')
    try {
      return await attempt()
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw error
    } finally {
      writer.exec(`PRAGMA busy_timeout = ${LOCK_WAIT_MS}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
}

/** Kysely's SQLite dialect, its statements waiting for the write lock as withoutBusyWait does, and prepared once per text (statement-cache.ts). */
export class LockWaitingSqliteDialect extends SqliteDialect {
  readonly #writer: SqliteDatabase.Database
  constructor(writer: SqliteDatabase.Database) {
    super({ database: withStatementCache(writer) })
    this.#writer = writer
  }

  override createDriver(): Driver {
    const driver = super.createDriver()
    const writer = this.#writer
    const wrapped = new WeakMap<DatabaseConnection, DatabaseConnection>()
    const waiting = (connection: DatabaseConnection): DatabaseConnection => {
      let known = wrapped.get(connection)
      if (!known) {
        known = {
          executeQuery: (query) => withoutBusyWait(writer, () => connection.executeQuery(query)),
          streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
        }
        wrapped.set(connection, known)
      }
      return known
    }
    return {
      init: () => driver.init(),
      acquireConnection: async () => waiting(await driver.acquireConnection()),
      beginTransaction: (connection, settings) => driver.beginTransaction(connection, settings),
      commitTransaction: (connection) => driver.commitTransaction(connection),
      rollbackTransaction: (connection) => driver.rollbackTransaction(connection),
      ...(driver.savepoint && { savepoint: driver.savepoint.bind(driver) }),
      ...(driver.rollbackToSavepoint && { rollbackToSavepoint: driver.rollbackToSavepoint.bind(driver) }),
      ...(driver.releaseSavepoint && { releaseSavepoint: driver.releaseSavepoint.bind(driver) }),
      releaseConnection: (connection) => driver.releaseConnection(connection),
      destroy: () => driver.destroy(),
    }
  }
}
