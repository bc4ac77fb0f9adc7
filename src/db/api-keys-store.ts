// The API keys store: rows of api_keys as stored, never a secret (only its hash).
// What a key means (its plan's limits, its scopes, its status) is api-keys/'s to
// say; this is only its storage. Written once for both databases: sql/api-keys.ts.

import type { Completion } from './idempotency-store.js'

/** Custom limits: enterprise keys only. */
export interface StoredLimits {
  perMinute: number
  perDay: number
}

export interface StoredApiKey {
  id: number
  name: string
  plan: string
  /** The non-secret start of the key, e.g. `ps_test_AbCd`. */
  prefix: string
  custom: StoredLimits | null
  /** Space-separated. */
  scopes: string
  /** Unix milliseconds, here and below. */
  createdAt: number
  lastUsedAt: number | null
  revokedAt: number | null
  expiresAt: number | null
  disabledAt: number | null
  /** The rate-limit identity this key shares with the key it was rolled from. */
  counterIdentity: string | null
  /** The key a roll made from this one. */
  replacedBy: number | null
}

export interface NewStoredApiKey {
  name: string
  plan: string
  prefix: string
  /** SHA-256 of the secret: the lookup key. */
  hash: string
  custom: StoredLimits | null
  scopes: string
  expiresAt: number | null
  counterIdentity: string | null
}

/** What an update may change; absent fields are kept. */
export interface ApiKeyChanges {
  name?: string
  plan?: string
  custom?: StoredLimits | null
  scopes?: string
  /** Null enables the key again. */
  disabledAt?: number | null
}

/** An Idempotency-Key claim to complete in the insert's transaction, with the 201 body made from the stored key. */
export interface KeyCompletion {
  completion: Completion
  body: (stored: StoredApiKey) => unknown
}

export interface ApiKeysStore {
  /** With `completion`, the claim is completed in the same transaction (ClaimLostError if it was taken over: nothing inserted). */
  insert(key: NewStoredApiKey, now: number, completion?: KeyCompletion): Promise<StoredApiKey>
  findByHash(hash: string): Promise<StoredApiKey | undefined>
  findById(id: number): Promise<StoredApiKey | undefined>
  /** Every key, by id. */
  list(): Promise<StoredApiKey[]>
  /** Up to `limit` keys with ids above `afterId`, by id. */
  page(afterId: number, limit: number): Promise<StoredApiKey[]>
  /** False when there is no such key. Revoking twice keeps the first time. */
  revoke(id: number, now: number): Promise<boolean>
  /** False when there is no such key. */
  setPlan(id: number, plan: string, custom: StoredLimits | null): Promise<boolean>
  /** The key as changed; undefined when there is no such key. */
  update(id: number, changes: ApiKeyChanges): Promise<StoredApiKey | undefined>
  /**
   * Inserts `next` and makes `id` stop working at `oldExpiresAt` (or its own expiry, if
   * sooner), in one transaction. Undefined when there is no such key.
   */
  roll(id: number, next: NewStoredApiKey, oldExpiresAt: number, now: number): Promise<{ old: StoredApiKey; next: StoredApiKey } | undefined>
  /** Records when the key was last used. */
  touch(id: number, now: number): Promise<void>
}
