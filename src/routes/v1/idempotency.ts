// Idempotency-Key for every create-like operation (IETF draft
// httpapi-idempotency-key-header), in one call: `run` parses the header, claims the
// key, runs the work inside the transaction that also stores its response, replays
// a stored response, and answers the key's own errors (409 in use, 422 reused).
// The records' SQL is db/idempotency-repository.ts; the header's syntax, lifetimes
// and fingerprints are idempotency-key.ts.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { Clock } from '../../clock.js'
import { ClaimLostError, type IdempotencyRepository } from '../../db/idempotency-repository.js'
import type { Database } from '../../db/schema.js'
import type { Transact } from '../../db/transaction.js'
import { ApiError } from '../../errors.js'
import { IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_TTL_MS, parseIdempotencyKey } from './idempotency-key.js'

/** Create-like operations answer 201; only a 201 is stored, so a request that failed frees its key. */
const CREATED = 201
/** Expired records outlive their 24 hours only until the next purge. */
const PURGE_EVERY_MS = 10 * 60 * 1000

export interface IdempotentWork<T> {
  /** What `request` asks for, canonicalised (idempotency-key.ts): the same key with another fingerprint is refused. Worked out only when a key is sent (it hashes the body). */
  fingerprint: () => string
  /** Does the work inside `trx`, the transaction that also stores its response; what it returns is the 201 body. */
  once: (trx: Kysely<Database>) => Promise<T>
  /** Without an Idempotency-Key: how to do the work (by default, `once` in a transaction of its own). */
  withoutKey?: () => Promise<T>
}

export interface IdempotentResult<T> {
  body: T
  /** True when this is the stored answer of an earlier request with the same key (send `Idempotent-Replayed: true`). */
  replayed: boolean
}

export type Idempotency = ReturnType<typeof createIdempotency>

export function createIdempotency({ records, transaction, clock }: { records: IdempotencyRepository; transaction: Transact; clock: Clock }) {
  const inUse = () =>
    new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still running; retry in a moment to get its answer.', {
      headers: { 'retry-after': '1' },
    })

  return {
    /** The one call a create-like handler makes. `request.apiKey` must be set (the /v1 guard has run). */
    async run<T>(request: FastifyRequest, { fingerprint, once, withoutKey }: IdempotentWork<T>): Promise<IdempotentResult<T>> {
      const key = parseIdempotencyKey(request.raw)
      if (key === undefined) return { body: await (withoutKey ? withoutKey() : transaction(once)), replayed: false }

      const scope = { apiKeyId: request.apiKey!.id, key }
      const claim = await records.claim(scope, { fingerprint: fingerprint(), now: clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS })
      switch (claim.outcome) {
        case 'mismatch':
          throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was already used with a different body; send a new key to make another request.')
        case 'in_flight':
          throw inUse()
        case 'replay':
          return { body: claim.response.body as T, replayed: true }
      }
      try {
        const { body } = await records.complete(claim.claim, async (trx) => ({ status: CREATED, body: await once(trx) }))
        return { body, replayed: false }
      } catch (error) {
        // A retry took the key over after the lease: its answer is the one that counts.
        if (error instanceof ClaimLostError) throw inUse()
        // Nothing was committed: free the key so that a retry runs afresh.
        await records.release(claim.claim).catch((releaseError: unknown) => request.log.warn({ err: releaseError }, 'could not release an Idempotency-Key'))
        throw error
      }
    },
  }
}

/** Deletes expired Idempotency-Key records every ten minutes; returns the function that stops it. */
export function startIdempotencyPurge(records: IdempotencyRepository, clock: Clock, log: FastifyBaseLogger): () => void {
  const timer = setInterval(() => {
    records.purgeExpired(clock.now()).catch((error: unknown) => log.warn({ err: error }, 'could not purge expired Idempotency-Keys'))
  }, PURGE_EVERY_MS).unref()
  return () => clearInterval(timer)
}
