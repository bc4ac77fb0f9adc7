// Idempotency-Key records (idempotency-store.ts): claiming, releasing, purging and
// resealing, written once in Kysely for both databases. Completing a claim runs inside
// the write's own transaction: in Kysely for the writes made in Kysely (completeClaimIn,
// below), and for the prepared writes of pets and orders, each backend runs
// COMPLETE_CLAIM (below) in its own way (sqlite/idempotency.ts, postgres/idempotency.ts).
import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../schema.js'
import { ClaimLostError, type Completion, type CompletionOf, type IdempotencyScope, type IdempotencyStore } from '../idempotency-store.js'
import { deleteInBatches } from './in-batches.js'

/** Expired keys the purge deletes a statement. */
const PURGE_BATCH = 1_000

export function createIdempotencyClaims(db: Kysely<Database>): IdempotencyStore {
  const record = (scope: IdempotencyScope) =>
    db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('account_id', '=', scope.accountId)
      .where('idempotency_key', '=', scope.key)

  return {
    async claim(scope, { fingerprint, now, ttlMs, leaseMs }) {
      const fresh = { fingerprint, locked_until: now + leaseMs, response_status: null, response_body: null, sealed_secret: null, created_at: now, expires_at: now + ttlMs }
      // The primary key makes the claim atomic across requests, processes and instances.
      const inserted = await db
        .insertInto('idempotency_keys')
        .values({ account_id: scope.accountId, idempotency_key: scope.key, ...fresh })
        .onConflict((oc) => oc.columns(['account_id', 'idempotency_key']).doNothing())
        .executeTakeFirst()
      const held = { outcome: 'claimed', claim: { ...scope, lockedUntil: fresh.locked_until } } as const
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0) return held

      const existing = await record(scope).executeTakeFirst()
      if (!existing) return { outcome: 'in_flight' } // released or purged this instant: the client retries
      const expired = existing.expires_at <= now
      // A key still remembered belongs to its first body, whether its request
      // completed, still runs, or died mid-request: another body is refused.
      if (!expired && existing.fingerprint !== fingerprint) return { outcome: 'mismatch' }
      const abandoned = existing.response_status === null && (existing.locked_until ?? 0) <= now
      if (expired || abandoned) {
        // Take over an expired record, or the abandoned claim of this same request;
        // the condition makes sure only one of several concurrent retries does.
        const taken = await db
          .updateTable('idempotency_keys')
          .set(fresh)
          .where('account_id', '=', scope.accountId)
          .where('idempotency_key', '=', scope.key)
          .where('created_at', '=', existing.created_at)
          .where('fingerprint', '=', existing.fingerprint)
          .executeTakeFirst()
        return taken.numUpdatedRows > 0n ? held : { outcome: 'in_flight' }
      }
      if (existing.response_status === null || existing.response_body === null) return { outcome: 'in_flight' }
      const sealed = existing.sealed_secret === null ? {} : { sealedSecret: existing.sealed_secret }
      return { outcome: 'replay', response: { status: existing.response_status, body: JSON.parse(existing.response_body) as unknown, ...sealed } }
    },

    async release(claim) {
      await db
        .deleteFrom('idempotency_keys')
        .where('account_id', '=', claim.accountId)
        .where('idempotency_key', '=', claim.key)
        .where('locked_until', '=', claim.lockedUntil)
        .execute()
    },

    async purgeExpired(now) {
      // In batches (in-batches.ts): a day of keys expires in ten minutes' purges.
      return deleteInBatches(PURGE_BATCH, async (limit) => {
        const expired = db.selectFrom('idempotency_keys').select(['account_id', 'idempotency_key']).where('expires_at', '<=', now).limit(limit).$asTuple('account_id', 'idempotency_key')
        const result = await db.deleteFrom('idempotency_keys').where((eb) => eb(eb.refTuple('account_id', 'idempotency_key'), 'in', expired)).executeTakeFirst()
        return result.numDeletedRows
      })
    },

    async sealedSecrets(after, limit) {
      let query = db.selectFrom('idempotency_keys').select(['account_id', 'idempotency_key', 'sealed_secret']).where('sealed_secret', 'is not', null)
      if (after) query = query.where((eb) => eb(eb.refTuple('account_id', 'idempotency_key'), '>', eb.tuple(after.accountId, after.key)))
      const rows = await query.orderBy('account_id').orderBy('idempotency_key').limit(limit).execute()
      return rows.map((row) => ({ accountId: Number(row.account_id), key: row.idempotency_key, sealedSecret: row.sealed_secret! }))
    },

    async replaceSealedSecret(scope, from, to) {
      const { numUpdatedRows } = await db
        .updateTable('idempotency_keys')
        .set({ sealed_secret: to })
        .where('account_id', '=', scope.accountId)
        .where('idempotency_key', '=', scope.key)
        .where('sealed_secret', '=', from)
        .executeTakeFirst()
      return numUpdatedRows > 0n
    },
  }
}

/**
 * Stores the response made from `stored` (and its sealed secret) as the claim's, in
 * `trx`, the write's own transaction; throws ClaimLostError, rolling it back, when a
 * retry took the claim over.
 */
export async function completeClaimIn<Row>(trx: Transaction<Database>, { completion, body, sealedSecret }: CompletionOf<Row>, stored: Row): Promise<void> {
  const { claim, status } = completion
  const done = await trx
    .updateTable('idempotency_keys')
    .set({ locked_until: null, response_status: status, response_body: JSON.stringify(body(stored)), sealed_secret: sealedSecret ?? null })
    .where('account_id', '=', claim.accountId)
    .where('idempotency_key', '=', claim.key)
    .where('locked_until', '=', claim.lockedUntil)
    .executeTakeFirst()
  if (done.numUpdatedRows === 0n) throw new ClaimLostError('the Idempotency-Key was taken over by a retry')
}

/**
 * Stores a claim's response, if the claim is still this request's (its token,
 * locked_until, unchanged): run inside the write's transaction, which the backend
 * rolls back with ClaimLostError when it changed no row. With the dialect's
 * placeholder (`?` or `$n`); the values are completionValues'.
 */
export const completeClaimSql = (param: (n: number) => string) =>
  `UPDATE idempotency_keys SET locked_until = NULL, response_status = ${param(1)}, response_body = ${param(2)}
    WHERE account_id = ${param(3)} AND idempotency_key = ${param(4)} AND locked_until = ${param(5)}`

export const completionValues = ({ claim, status }: Completion, body: unknown) =>
  [status, JSON.stringify(body), claim.accountId, claim.key, claim.lockedUntil] as const
