// The API keys store: rows of accounts and api_keys as stored, never a secret (only
// its hash). What a key means (its plan's limits, its scopes, its status) is
// api-keys/'s to say; this is only its storage. Written once for both databases:
// sql/api-keys.ts.

import type { CompletionOf } from './idempotency-store.js'

/** Custom limits: enterprise accounts only. */
export interface StoredLimits {
  perMinute: number
  perDay: number
}

/** An account: the owner of keys and of what they make, with the plan they share (decision D11). */
export interface StoredAccount {
  id: number
  name: string
  plan: string
  custom: StoredLimits | null
  /** Unix milliseconds, here and below. */
  createdAt: number
  disabledAt: number | null
}

export interface NewStoredAccount {
  name: string
  plan: string
  custom: StoredLimits | null
}

export interface StoredApiKey {
  id: number
  /** The account the key belongs to, as stored with it. */
  account: StoredAccount
  name: string
  /** The non-secret start of the key, e.g. `ps_test_AbCd`. */
  prefix: string
  /** Space-separated. */
  scopes: string
  createdAt: number
  lastUsedAt: number | null
  revokedAt: number | null
  expiresAt: number | null
  disabledAt: number | null
  /** Disabled by the operator, who alone enables it again. */
  disabledByOperator: boolean
  /** The key a roll made from this one. */
  replacedBy: number | null
  /** The key that made this one over the API; null: the operator. */
  createdBy: number | null
}

export interface NewStoredApiKey {
  name: string
  prefix: string
  /** SHA-256 of the secret: the lookup key. */
  hash: string
  scopes: string
  expiresAt: number | null
  /** A rolled key starts disabled when the key it replaces was (and by the operator, when that one was). */
  disabledAt: number | null
  disabledByOperator?: boolean
  createdBy: number | null
  /** An existing account's id, or a new account to make with the key, in one transaction. */
  account: number | NewStoredAccount
  /**
   * The key making (or rolling) this one over the API, and whether it may still act, as
   * read in the write's transaction. The write fails with ActingKeyRefused unless it may
   * when the write commits: revoked on another instance, or by the operator, a key stays
   * in caches for a few seconds (D6), and a key it made then must not escape the cascade
   * that revoked it.
   */
  actingKey?: { id: number; mayAct: (stored: StoredApiKey) => boolean }
  /** With it, the account's live keys (not revoked, not expired) this one included must be at most this many, or the write fails with KeyLimitReached. */
  liveKeysAtMost?: number
}

/** The account has as many live keys as it may: nothing was written. */
export class KeyLimitReached extends Error {
  override name = 'KeyLimitReached'
  constructor(readonly limit: number) {
    super(`the account has ${limit} live keys`)
  }
}

/** The key acting was revoked, expired or disabled (or its account) before the write committed: nothing was written. */
export class ActingKeyRefused extends Error {
  override name = 'ActingKeyRefused'
  constructor(readonly keyId: number) {
    super(`key ${keyId} is no longer active`)
  }
}

/** What an update may change; absent fields are kept. */
export interface ApiKeyChanges {
  name?: string
  scopes?: string
  /** Null enables the key again. */
  disabledAt?: number | null
  disabledByOperator?: boolean
  /**
   * Write only if the key's operator mark is still this (as the caller read it): else
   * nothing is written, and the key is answered as it stands, its mark telling so.
   */
  whileDisabledByOperator?: boolean
}

/** What an account update may change; absent fields are kept. */
export interface AccountChanges {
  name?: string
  plan?: string
  custom?: StoredLimits | null
  /** Null enables the account again. */
  disabledAt?: number | null
}

export interface ApiKeysStore {
  /** With `completion`, the claim is completed in the same transaction, the 201 body made from the stored key (ClaimLostError if it was taken over: nothing inserted). */
  insert(key: NewStoredApiKey, now: number, completion?: CompletionOf<StoredApiKey>): Promise<StoredApiKey>
  findByHash(hash: string): Promise<StoredApiKey | undefined>
  findById(id: number): Promise<StoredApiKey | undefined>
  /** Up to `limit` keys with ids above `afterId`, by id: of one account, or of every account when `accountId` is undefined. */
  page(accountId: number | undefined, afterId: number, limit: number): Promise<StoredApiKey[]>
  /**
   * Revokes the key, and with `cascade` every key it made, however deep: the ids
   * revoked now (a key revoked before keeps its time); undefined when there is no such key.
   */
  revoke(id: number, now: number, cascade: boolean): Promise<number[] | undefined>
  /** The keys a cascading revoke of `id` would revoke now (itself included, if not revoked yet), with their scopes. */
  cascadeOf(id: number): Promise<{ id: number; scopes: string }[]>
  /**
   * The key's lineage upward: the key that made it, and theirs, however far, and the keys
   * of its roll (the one it replaced and the one that replaced it, which are the same
   * credential rolled), and theirs.
   */
  ancestors(id: number): Promise<number[]>
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

export interface AccountsStore {
  findById(id: number): Promise<StoredAccount | undefined>
  /** Up to `limit` accounts with ids above `afterId`, by id. */
  page(afterId: number, limit: number): Promise<StoredAccount[]>
  /** The account as changed; undefined when there is no such account. */
  update(id: number, changes: AccountChanges): Promise<StoredAccount | undefined>
  /** How many keys each account has, revoked ones included, in one query (an account with none is absent). */
  keyCounts(ids: readonly number[]): Promise<Map<number, number>>
}
