// One transaction on one pooled connection, for a write that must commit together
// with its Idempotency-Key response. Other writes are one statement each (autocommit).
import type pg from 'pg'
import { isUnavailable } from '../store-errors.js'

export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect()
  // A connection that cannot even begin or roll back is not handed to anyone else.
  let broken: Error | undefined
  try {
    await client.query('BEGIN').catch((error: Error) => {
      broken = error
      throw error
    })
    try {
      const result = await work(client)
      await client.query('COMMIT')
      return result
    } catch (error) {
      // A lost connection (or one whose query outlived query_timeout, and whose answer
      // may never come) cannot carry a ROLLBACK: it would wait another query_timeout
      // behind the lost query, or fail at once. Dropping the connection is the
      // rollback: PostgreSQL aborts a transaction whose connection closes.
      if (isUnavailable(error)) broken = error
      else await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError))
      throw error
    }
  } finally {
    client.release(broken)
  }
}
