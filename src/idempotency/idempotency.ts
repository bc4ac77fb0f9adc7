// Idempotency-Key for every create-like operation (IETF draft
// httpapi-idempotency-key-header), in one call: `run` parses the header, claims the
// key, hands the write a Completion (the store then stores the response in the
// write's own transaction), replays a stored response, and answers the key's own
// errors (409 in use, 422 reused). A 201 that carries a secret (a new key, a new
// webhook endpoint) keeps it sealed in the record (the write seals it with the
// Completion's `seal`), and a replay answers it opened: the same 201, secret included,
// and no secret readable at rest. The records are db/idempotency-store.ts; the
// header's syntax, lifetimes and fingerprints are idempotency-key.ts.
import type { FastifyRequest } from 'fastify'
import type { Clock } from '../clock.js'
import { ClaimLostError, type Claim, type Completion, type IdempotencyStore } from '../db/idempotency-store.js'
import { StoreUnavailableError } from '../db/store-errors.js'
import { ApiError } from '../errors.js'
import type { SecretBox } from '../secrets/secret-box.js'
import { IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_TTL_MS, parseIdempotencyKey } from './idempotency-key.js'

/** Create-like operations answer 201; only a 201 is stored, so a request that failed frees its key. */
const CREATED = 201

/** What a write gets with a key: the claim to complete in its transaction, and `seal` for a secret its 201 carries (stored as `sealedSecret`, never in the clear). */
export interface SealingCompletion extends Completion {
  seal: (secret: string) => string
}

export interface IdempotentWork<R> {
  /** What the request asks for, canonicalised (idempotency-key.ts): the same key with another fingerprint is refused. Worked out only when a key is sent (it hashes the body). */
  fingerprint: () => string
  /**
   * The store's write. With a key it gets a Completion, and must store its 201 body
   * with it in the same transaction (pets.insert, orders.place take one), and a secret
   * the body carries sealed beside it; without a key, undefined.
   */
  write: (completion: SealingCompletion | undefined) => Promise<R>
  /** Whether the write's result is a success the store completed the claim with (by default, every result); a refusal frees the key. */
  completed?: (result: R) => boolean
}

export type IdempotentResult<R> =
  /** The write ran now. */
  | { replayed: false; result: R }
  /** The stored 201 body of an earlier request with the same key (send `Idempotent-Replayed: true`), and the secret it carried, opened. */
  | { replayed: true; body: unknown; secret: string | undefined }

export type Idempotency = ReturnType<typeof createIdempotency>

export function createIdempotency({ records, clock, secrets }: { records: IdempotencyStore; clock: Clock; secrets: SecretBox }) {
  const box = secrets.for('replayed secret')
  const inUse = () =>
    new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still running; retry in a moment to get its answer.', {
      headers: { 'retry-after': '1' },
    })

  return {
    /** The one call a create-like handler makes. `request.apiKey` must be set (the /v1 guard has run). */
    async run<R>(request: FastifyRequest, { fingerprint, write, completed = () => true }: IdempotentWork<R>): Promise<IdempotentResult<R>> {
      const key = parseIdempotencyKey(request.raw)
      if (key === undefined) return { replayed: false, result: await write(undefined) }

      const scope = { accountId: request.apiKey!.accountId, key }
      const now = clock.now()
      let claim: Claim
      try {
        claim = await records.claim(scope, { fingerprint: fingerprint(), now, ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS })
      } catch (error) {
        // The claim's answer was lost (a connection cut): it may be held, by nobody. Its
        // token is known (its lease's end), so give it up, or the client's retry with this
        // key would be told 409 in use until the lease runs out (15 s).
        if (error instanceof StoreUnavailableError && error.outcome === 'unknown') {
          void records.release({ ...scope, lockedUntil: now + IDEMPOTENCY_LEASE_MS }).catch((releaseError: unknown) => request.log.warn({ err: releaseError }, 'could not release an Idempotency-Key whose claim was lost'))
        }
        throw error
      }
      switch (claim.outcome) {
        case 'mismatch':
          throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was already used with a different request (another body or operation); send a new key to make another request.')
        case 'in_flight':
          throw inUse()
        case 'replay': {
          const { body, sealedSecret } = claim.response
          return { replayed: true, body, secret: sealedSecret === undefined ? undefined : box.open(sealedSecret) }
        }
      }
      const release = () =>
        records.release(claim.claim).catch((releaseError: unknown) => request.log.warn({ err: releaseError }, 'could not release an Idempotency-Key'))
      let result: R
      try {
        result = await write({ claim: claim.claim, status: CREATED, seal: box.seal })
      } catch (error) {
        // A retry took the key over after the lease: its answer is the one that counts.
        if (error instanceof ClaimLostError) throw inUse()
        // Nothing was committed: free the key so that a retry runs afresh.
        await release()
        throw error
      }
      // Refused (a 404 or 409 to come): nothing was stored, and the key is free again.
      if (!completed(result)) await release()
      return { replayed: false, result }
    },
  }
}
