// One way to run work in a transaction, on either database. `work` gets the
// transaction's handle; it commits when work resolves and rolls back when it throws.
import { sql, type Kysely } from 'kysely'
import type { DatabaseHandle } from './database.js'
import type { Database } from './schema.js'

export type Transact = <T>(work: (trx: Kysely<Database>) => Promise<T>) => Promise<T>

export function createTransact(handle: DatabaseHandle): Transact {
  if (handle.dialect === 'postgres') return (work) => handle.db.transaction().execute(work)
  // SQLite: BEGIN IMMEDIATE takes the write lock up front, so that two processes on
  // one file never both read, then both try to upgrade (SQLITE_BUSY at once, without
  // waiting); with the lock taken first, the other waits its busy_timeout instead.
  // Kysely's own transaction() says BEGIN (deferred). The connection lock is the one
  // group commit takes too, so nothing else runs on the writer meanwhile.
  return (work) =>
    handle.db.connection().execute(async (conn) => {
      await sql`begin immediate`.execute(conn)
      let result
      try {
        result = await work(conn)
      } catch (error) {
        await sql`rollback`.execute(conn)
        throw error
      }
      await sql`commit`.execute(conn)
      return result
    })
}
