// Completing an Idempotency-Key claim on PostgreSQL, inside the write's transaction.
import type pg from 'pg'
import { ClaimLostError, type Completion } from '../idempotency-store.js'
import { completeClaimSql, completionValues } from '../sql/idempotency-claims.js'

const COMPLETE_CLAIM = { name: 'petstore_idempotency_complete', text: completeClaimSql((n) => `$${n}`) }

/** Stores `body` as the claim's response on `client` (in its transaction); throws ClaimLostError when a retry took the claim over, so that the caller rolls back. */
export async function completeClaim(client: pg.PoolClient, completion: Completion, body: unknown): Promise<void> {
  const { rowCount } = await client.query({ ...COMPLETE_CLAIM, values: [...completionValues(completion, body)] })
  if (!rowCount) throw new ClaimLostError('the Idempotency-Key was taken over by a retry')
}
