// The API keys store: rows of api_keys as stored, never a secret (only its hash).
// What a key means (its plan's limits, the record the service passes around) is
// api-keys/'s to say; this is only its storage. Written once for both databases:
// sql/api-keys.ts.

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
  /** Unix milliseconds. */
  createdAt: number
  lastUsedAt: number | null
  revokedAt: number | null
}

export interface NewStoredApiKey {
  name: string
  plan: string
  prefix: string
  /** SHA-256 of the secret: the lookup key. */
  hash: string
  custom: StoredLimits | null
}

export interface ApiKeysStore {
  insert(key: NewStoredApiKey, now: number): Promise<StoredApiKey>
  findByHash(hash: string): Promise<StoredApiKey | undefined>
  findById(id: number): Promise<StoredApiKey | undefined>
  /** Every key, by id. */
  list(): Promise<StoredApiKey[]>
  /** False when there is no such key. Revoking twice keeps the first time. */
  revoke(id: number, now: number): Promise<boolean>
  /** False when there is no such key. */
  setPlan(id: number, plan: string, custom: StoredLimits | null): Promise<boolean>
  /** Records when the key was last used. */
  touch(id: number, now: number): Promise<void>
}
