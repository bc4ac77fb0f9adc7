// Turns an Authorization header into an API key record, or a reason it is refused.
// Records are cached for a few seconds so the hot path rarely touches the store;
// the cache's lifetime bounds how long a revocation, a plan or scope change, or
// disabling takes to reach a running instance (within 5 seconds). Expiry is checked
// against the clock on every request, cached or not.
import type { Clock } from '../clock.js'
import type { ApiKeysStore } from '../db/api-keys-store.js'
import { keyState, toApiKeyRecord, type ApiKeyRecord } from './api-key-record.js'
import { hashApiKey, parseApiKey, type KeyEnvironment } from './key-format.js'

export type AuthResult =
  | { ok: true; key: ApiKeyRecord }
  /** `description`: RFC 6750's error_description for the challenge, when there is more to say than invalid_token. */
  | { ok: false; missing: boolean; message: string; description?: string }

export interface AuthenticatorOptions {
  apiKeys: Pick<ApiKeysStore, 'findByHash' | 'touch'>
  clock: Clock
  environment: KeyEnvironment
  cacheMs?: number
  /** How long before a cached entry expires a request starts its background refresh. */
  refreshAheadMs?: number
  maxCached?: number
  /** A store call no request waits for failed: recording a key's last use, or refreshing a cached key. */
  onError?: (error: unknown, what: string) => void
}

const LAST_USED_GRANULARITY_MS = 60_000
const MISSING: AuthResult = Object.freeze({ ok: false, missing: true, message: 'Missing API key: send it as "Authorization: Bearer <key>".' })
// RFC 6750 / RFC 9110: the scheme is case-insensitive, the token is a b64token.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

export function createAuthenticator({
  apiKeys,
  clock,
  environment,
  cacheMs = 3_000,
  refreshAheadMs = 1_000,
  maxCached = 10_000,
  onError = () => {},
}: AuthenticatorOptions) {
  // Keyed by the Authorization header as sent, not by the key's hash: a hit then costs
  // neither the Bearer parse, nor the checksum, nor SHA-256 (the header is in this
  // process's memory with every request anyway). Only keys found in the store are
  // kept, so a hit is a well-formed key of this environment. The store is still
  // looked up by hash.
  const cache = new Map<string, { key: ApiKeyRecord; token: string; until: number }>()
  // Lookups under way, by header. The requests that miss while one runs wait for it:
  // without this, an entry expiring under load sent one store query per request
  // until the first came back.
  const looking = new Map<string, Promise<ApiKeyRecord | undefined>>()
  const lastTouched = new Map<number, number>()

  function cached(header: string, now: number): ApiKeyRecord | undefined {
    const hit = cache.get(header)
    if (!hit || hit.until <= now) return undefined
    // A key in use is looked up again shortly before its entry expires, in the
    // background, so that under steady use no request waits for the store. The
    // entry's lifetime, not the refresh, bounds how long a revocation takes (D6).
    if (hit.until - now <= refreshAheadMs && !looking.has(header)) {
      lookup(header, hit.token, now).catch((error: unknown) => onError(error, 'could not refresh a cached API key'))
    }
    return hit.key
  }

  function lookup(header: string, token: string, now: number): Promise<ApiKeyRecord | undefined> {
    const under = looking.get(header)
    if (under) return under
    const pending = apiKeys
      .findByHash(hashApiKey(token))
      .then((stored) => {
        const key = stored && toApiKeyRecord(stored)
        cache.delete(header) // re-inserted last: the oldest entries go first when the cache is full
        if (cache.size >= maxCached) cache.delete(cache.keys().next().value as string)
        // Unknown keys are not remembered: a key created a moment ago must work at once.
        if (key) cache.set(header, { key, token, until: now + cacheMs })
        return key
      })
      .finally(() => looking.delete(header))
    looking.set(header, pending)
    return pending
  }

  function touch(key: ApiKeyRecord, now: number) {
    if (now - (lastTouched.get(key.id) ?? 0) < LAST_USED_GRANULARITY_MS) return
    lastTouched.set(key.id, now)
    apiKeys.touch(key.id, now).catch((error: unknown) => onError(error, 'could not record when an API key was last used'))
  }

  /** The key's record, undefined when the store does not know it, or why its format is refused. */
  async function checkAndLookup(header: string, token: string, now: number): Promise<ApiKeyRecord | undefined | string> {
    const parsed = parseApiKey(token)
    if (!parsed.ok) {
      return 'The API key is malformed: keys start with ps_live_ or ps_test_ and end in a checksum; check it was copied whole.'
    }
    if (parsed.environment !== environment) {
      return `This is a ${parsed.environment} key (ps_${parsed.environment}_…); this server accepts ${environment} keys (ps_${environment}_…).`
    }
    return lookup(header, token, now)
  }

  function verdict(key: ApiKeyRecord | undefined | string, now: number): AuthResult {
    if (typeof key === 'string') return { ok: false, missing: false, message: key }
    if (!key) return { ok: false, missing: false, message: 'The API key is not recognised.' }
    switch (keyState(key, now)) {
      case 'revoked':
        return { ok: false, missing: false, message: 'The API key has been revoked.', description: 'The API key has been revoked' }
      case 'expired':
        return key.replacedBy === null
          ? { ok: false, missing: false, message: `The API key expired at ${key.expiresAt}.`, description: 'The API key expired' }
          : { ok: false, missing: false, message: `The API key expired at ${key.expiresAt}: it was rolled, and replaced by key ${key.replacedBy}.`, description: 'The API key expired' }
      case 'disabled':
        return key.disabledAt === null
          ? { ok: false, missing: false, message: `The account of this API key (account ${key.accountId}) is disabled; the operator can enable it again.`, description: 'The account is disabled' }
          : { ok: false, missing: false, message: 'The API key is disabled; a key with keys:write can enable it again.', description: 'The API key is disabled' }
      case 'active':
    }
    touch(key, now)
    return { ok: true, key }
  }

  /** The Bearer token, or why the header is refused. */
  function tokenOf(header: string): string | AuthResult {
    return BEARER.exec(header)?.[1] ?? { ok: false, missing: false, message: 'The Authorization header must be "Bearer <key>".' }
  }

  return {
    /** The answer when it needs no store lookup (no key, a malformed header, a cached key); undefined otherwise. */
    peek(header: string | undefined): AuthResult | undefined {
      if (!header) return MISSING
      const now = clock.now()
      const hit = cached(header, now)
      if (hit) return verdict(hit, now)
      const token = tokenOf(header)
      return typeof token === 'string' ? undefined : token
    },
    /** The answer, looking the key up in the store when it is not cached. */
    async authenticate(header: string | undefined): Promise<AuthResult> {
      if (!header) return MISSING
      const token = tokenOf(header)
      if (typeof token !== 'string') return token
      const now = clock.now()
      return verdict(cached(header, now) ?? (await checkAndLookup(header, token, now)), now)
    },
  }
}

export type Authenticator = ReturnType<typeof createAuthenticator>
