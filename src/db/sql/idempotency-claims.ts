// Idempotency-Key records (idempotency-store.ts): claiming, releasing and purging,
// written once in Kysely for both databases. Completing a claim is not here: it runs
// inside the write's own transaction, so each backend runs COMPLETE_CLAIM (below) in
// its own way (sqlite/idempotency.ts, postgres/idempotency.ts).
import type { Kysely } from 'kysely'
import type { Database } from '../schema.js'
import type { Completion, IdempotencyScope, IdempotencyStore } from '../idempotency-store.js'

export function createIdempotencyClaims(db: Kysely<Database>): IdempotencyStore {
  const record = (scope: IdempotencyScope) =>
    db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('account_id', '=', scope.accountId)
      .where('idempotency_key', '=', scope.key)

  return {
    async claim(scope, { fingerprint, now, ttlMs, leaseMs }) {
      const fresh = { fingerprint, locked_until: now + leaseMs, response_status: null, response_body: null, created_at: now, expires_at: now + ttlMs }
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
      return { outcome: 'replay', response: { status: existing.response_status, body: JSON.parse(existing.response_body) as unknown } }
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
      const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst()
      return Number(result.numDeletedRows)
    },
  }
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
