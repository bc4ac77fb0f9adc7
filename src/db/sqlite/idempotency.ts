// Completing an Idempotency-Key claim on SQLite: a prepared statement run inside the
// write's own operation in the group commit, so the response commits with the effect.
import type SqliteDatabase from 'better-sqlite3'
import { ClaimLostError, type Completion } from '../idempotency-store.js'
import { completeClaimSql, completionValues } from '../sql/idempotency-claims.js'

/** Stores `body` as the claim's response; throws ClaimLostError (rolling the operation's savepoint back) when a retry took the claim over. */
export type CompleteClaim = (completion: Completion, body: unknown) => void

export function createSqliteCompleteClaim(writer: SqliteDatabase.Database): CompleteClaim {
  const statement = writer.prepare(completeClaimSql(() => '?'))
  return (completion, body) => {
    if (statement.run(...completionValues(completion, body)).changes === 0) {
      throw new ClaimLostError('the Idempotency-Key was taken over by a retry')
    }
  }
}
