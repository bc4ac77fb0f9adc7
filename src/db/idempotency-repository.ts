// Idempotency-Key records (IETF draft httpapi-idempotency-key-header): the first
// request with a key claims it, runs, and stores its response in the same
// transaction as its effect; a retry with the same key replays that response.
import type { Kysely } from 'kysely'
import type { Database } from './schema.js'
import type { Transact } from './transaction.js'

/** Which request a record belongs to: keys are scoped per API key. */
export interface IdempotencyScope {
  apiKeyId: number
  key: string
}

export interface StoredResponse<T = unknown> {
  status: number
  body: T
}

/**
 * A key this request holds. `lockedUntil` is the claim's token: a claim taken over
 * after its lease gets a later one, so the first holder, if it was only slow, can
 * neither complete nor release the new holder's claim.
 */
export interface HeldClaim extends IdempotencyScope {
  lockedUntil: number
}

/** Thrown by `complete` when the claim was taken over meanwhile; nothing was committed. */
export class ClaimLostError extends Error {
  override name = 'ClaimLostError'
}

export type Claim =
  /** This request holds the key: run it, then `complete` (or `release` on failure). */
  | { outcome: 'claimed'; claim: HeldClaim }
  /** Another request with this key is still running. */
  | { outcome: 'in_flight' }
  /** The key was used with another body. */
  | { outcome: 'mismatch' }
  /** The key's request completed: answer its response again. */
  | { outcome: 'replay'; response: StoredResponse }

export interface ClaimOptions {
  fingerprint: string
  now: number
  /** How long a record (and so its replay) lives. */
  ttlMs: number
  /**
   * How long a claim holds the key before another request may take it over: a
   * process that died mid-request never completes or releases its claim.
   */
  leaseMs: number
}

export type IdempotencyRepository = ReturnType<typeof createIdempotencyRepository>

export function createIdempotencyRepository(db: Kysely<Database>, transaction: Transact) {
  const record = (scope: IdempotencyScope) =>
    db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('api_key_id', '=', scope.apiKeyId)
      .where('idempotency_key', '=', scope.key)

  return {
    async claim(scope: IdempotencyScope, { fingerprint, now, ttlMs, leaseMs }: ClaimOptions): Promise<Claim> {
      const fresh = { fingerprint, locked_until: now + leaseMs, response_status: null, response_body: null, created_at: now, expires_at: now + ttlMs }
      // The primary key makes the claim atomic across requests, processes and instances.
      const inserted = await db
        .insertInto('idempotency_keys')
        .values({ api_key_id: scope.apiKeyId, idempotency_key: scope.key, ...fresh })
        .onConflict((oc) => oc.columns(['api_key_id', 'idempotency_key']).doNothing())
        .executeTakeFirst()
      const held = { outcome: 'claimed', claim: { ...scope, lockedUntil: fresh.locked_until } } as const
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0) return held

      const existing = await record(scope).executeTakeFirst()
      if (!existing) return { outcome: 'in_flight' } // released or purged this instant: the client retries
      const abandoned = existing.response_status === null && (existing.locked_until ?? 0) <= now
      if (existing.expires_at <= now || abandoned) {
        // Take over an expired record or an abandoned claim; the condition makes
        // sure only one of several concurrent retries does.
        const taken = await db
          .updateTable('idempotency_keys')
          .set(fresh)
          .where('api_key_id', '=', scope.apiKeyId)
          .where('idempotency_key', '=', scope.key)
          .where('created_at', '=', existing.created_at)
          .where('fingerprint', '=', existing.fingerprint)
          .executeTakeFirst()
        return taken.numUpdatedRows > 0n ? held : { outcome: 'in_flight' }
      }
      if (existing.fingerprint !== fingerprint) return { outcome: 'mismatch' }
      if (existing.response_status === null || existing.response_body === null) return { outcome: 'in_flight' }
      return { outcome: 'replay', response: { status: existing.response_status, body: JSON.parse(existing.response_body) as unknown } }
    },

    /**
     * Runs the claimed request's work and stores its response in one transaction:
     * the effect and its record commit together, or neither does.
     */
    async complete<T>(claim: HeldClaim, work: (trx: Kysely<Database>) => Promise<StoredResponse<T>>): Promise<StoredResponse<T>> {
      return transaction(async (trx) => {
        const response = await work(trx)
        const stored = await trx
          .updateTable('idempotency_keys')
          .set({ locked_until: null, response_status: response.status, response_body: JSON.stringify(response.body) })
          .where('api_key_id', '=', claim.apiKeyId)
          .where('idempotency_key', '=', claim.key)
          .where('locked_until', '=', claim.lockedUntil)
          .executeTakeFirst()
        // Rolls the work back: the request that took the claim over is the one that counts.
        if (stored.numUpdatedRows === 0n) throw new ClaimLostError('the Idempotency-Key was taken over by a retry')
        return response
      })
    },

    /** Gives up a claim whose request failed, so that a retry runs it afresh. */
    async release(claim: HeldClaim): Promise<void> {
      await db
        .deleteFrom('idempotency_keys')
        .where('api_key_id', '=', claim.apiKeyId)
        .where('idempotency_key', '=', claim.key)
        .where('locked_until', '=', claim.lockedUntil)
        .execute()
    },

    /** Deletes expired records; returns how many. */
    async purgeExpired(now: number): Promise<number> {
      const result = await db.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst()
      return Number(result.numDeletedRows)
    },
  }
}
