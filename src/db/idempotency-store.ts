// Idempotency-Key records (IETF draft httpapi-idempotency-key-header): the first
// request with a key claims it, runs, and stores its response in the same
// transaction as its effect (a `Completion` handed to the write, see pets-store.ts
// and orders-store.ts); a retry with the same key replays that response. The
// request-level rules (header, fingerprints, lifetimes, answers) are
// src/idempotency/; the records' SQL, written once for both databases, is
// sql/idempotency-claims.ts.

/** Which request a record belongs to: keys are scoped per API key. */
export interface IdempotencyScope {
  accountId: number
  key: string
}

export interface StoredResponse<T = unknown> {
  status: number
  body: T
  /** The secret the 201 carried, sealed (src/secrets/secret-box.ts); only for a create that answers one (a key, a webhook endpoint). */
  sealedSecret?: string
}

/**
 * A key this request holds. `lockedUntil` is the claim's token, the end of its lease
 * (`now + leaseMs` of the claim that took it, so known before its answer comes): a claim
 * taken over after its lease gets a later one, so the first holder, if it was only slow,
 * can neither complete nor release the new holder's claim.
 */
export interface HeldClaim extends IdempotencyScope {
  lockedUntil: number
}

/**
 * Handed to a write (pets.insert, orders.place): in the write's own transaction, its
 * result is stored as the claim's response with this status. When the claim was
 * taken over meanwhile, the write is rolled back and rejects with ClaimLostError.
 */
export interface Completion {
  claim: HeldClaim
  status: number
}

/**
 * A Completion of a write whose 201 body is made from the row it stored (api keys,
 * categories, webhook endpoints), with the secret that body carries sealed, never in
 * the clear: the body is stored without it, and a replay answers it opened.
 */
export interface CompletionOf<Row> {
  completion: Completion
  body: (stored: Row) => unknown
  sealedSecret?: string
}

/** A write given a Completion found its claim taken over; nothing was committed. */
export class ClaimLostError extends Error {
  override name = 'ClaimLostError'
}

export type Claim =
  /** This request holds the key: run it with a Completion (or `release` on failure). */
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
   * How long a claim holds the key before a retry with the same fingerprint may take
   * it over: a process that died mid-request never completes or releases its claim.
   */
  leaseMs: number
}

/** A record's sealed secret (the reseal command): which record, and the secret as stored. */
export interface StoredSealedSecret extends IdempotencyScope {
  sealedSecret: string
}

export interface IdempotencyStore {
  /** Claims the key for this request, or says why not. Atomic across requests, processes and instances. */
  claim(scope: IdempotencyScope, options: ClaimOptions): Promise<Claim>
  /** Gives up a claim whose request failed or was refused, so that a retry runs afresh. */
  release(claim: HeldClaim): Promise<void>
  /** Deletes expired records; returns how many. (The store also does it every few minutes by itself.) */
  purgeExpired(now: number): Promise<number>
  /** The records holding a sealed secret, in key order, after `after` (the reseal command). */
  sealedSecrets(after: IdempotencyScope | undefined, limit: number): Promise<StoredSealedSecret[]>
  /** Replaces a record's sealed secret if it is still `from`; whether it did. */
  replaceSealedSecret(scope: IdempotencyScope, from: string, to: string): Promise<boolean>
}
