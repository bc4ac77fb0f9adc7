// Turns an Authorization header into an API key record, or a reason it is refused.
// Records are cached for a few seconds so the hot path rarely touches the store;
// the cache's lifetime bounds how long a revocation, a plan or scope change, or
// disabling takes to reach a running instance (within 5 seconds), for a key let
// through: a record past its lifetime can still refuse its key (a ban, decided before
// the store is asked again, or a revocation or expiry, which are final), so neither a
// banned key nor a dead one is looked up again while it floods.
// Expiry is checked against the clock on every request, cached or not. Keys the store does not know
// are remembered too, as briefly and in a bounded map: a made-up key sent again and
// again costs one lookup per lifetime, not one per request.
import type { Clock } from '../clock.js'
import type { ApiKeysStore } from '../db/api-keys-store.js'
import { keyState, toApiKeyRecord, type ApiKeyRecord, type KeyState } from './api-key-record.js'
import { hashApiKey, parseApiKey, type KeyEnvironment } from './key-format.js'

export type AuthResult =
  | {
      ok: true
      key: ApiKeyRecord
      /**
       * peek(): the record is cached but past its lifetime. Fit to refuse the key with (a
       * ban on it), not to let it through: authenticate() looks it up again first.
       */
      stale?: true
      /** peek(): the record is due for a refresh; refresh() looks it up in the background. */
      due?: true
    }
  /** `description`: RFC 6750's error_description for the challenge, when there is more to say than invalid_token. */
  | { ok: false; missing: boolean; message: string; description?: string }

export interface AuthenticatorOptions {
  apiKeys: Pick<ApiKeysStore, 'findByHash' | 'touch'>
  /** The same, for the calls no request waits for (a refresh, a last use): the store's background view, counted apart. By default apiKeys. */
  background?: Pick<ApiKeysStore, 'findByHash' | 'touch'>
  clock: Clock
  environment: KeyEnvironment
  cacheMs?: number
  /** How long before a cached entry expires a request starts its background refresh. */
  refreshAheadMs?: number
  maxCached?: number
  /** How many unknown keys are remembered (each for cacheMs); the oldest are forgotten first. */
  maxUnknown?: number
  /** A store call no request waits for failed: recording a key's last use, or refreshing a cached key. */
  onError?: (error: unknown, what: string) => void
  /** Whether the store refuses calls at once now (its circuit is open: the database went silent). */
  storeRefusing?: () => boolean
}

const LAST_USED_GRANULARITY_MS = 60_000
/** The states no change to a key can leave: a record past its lifetime still answers them. */
const FINAL: ReadonlySet<KeyState> = new Set(['revoked', 'expired'])
const MISSING: AuthResult = Object.freeze({ ok: false, missing: true, message: 'Missing API key: send it as "Authorization: Bearer <key>".' })
// RFC 6750 / RFC 9110: the scheme is case-insensitive, the token is a b64token.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

export function createAuthenticator({
  apiKeys,
  background = apiKeys,
  clock,
  environment,
  cacheMs = 3_000,
  refreshAheadMs = 1_000,
  maxCached = 10_000,
  maxUnknown = 10_000,
  onError = () => {},
  storeRefusing = () => false,
}: AuthenticatorOptions) {
  // Keyed by the token, not by the header as sent: "bearer", "BEARER" and any number
  // of spaces name the same key (RFC 6750, RFC 9110 §11.1), and must not each cost a
  // lookup. Nor by the key's hash: a hit costs neither the checksum nor SHA-256. Only
  // keys found in the store are kept, so a hit is a well-formed key of this environment.
  const cache = new Map<string, { key: ApiKeyRecord; until: number }>()
  // Tokens the store did not know, until when. A key made a moment ago is not among
  // them unless its secret was sent before it existed, which only a guess can do.
  const unknown = new Map<string, number>()
  // Lookups under way, by token. The requests that miss while one runs wait for it:
  // without this, an entry expiring under load sent one store query per request
  // until the first came back.
  const looking = new Map<string, Promise<ApiKeyRecord | undefined>>()
  const lastTouched = new Map<number, number>()
  /** How many times forget() was called: a lookup that began before one does not cache what it read. */
  let forgotten = 0

  /** The record, null when the store did not know the token a moment ago, undefined when not cached (or past its lifetime). `hit`: the cache's entry, when the caller has read it. */
  function cached(token: string, now: number, hit = cache.get(token)): ApiKeyRecord | null | undefined {
    if (hit && hit.until > now) return hit.key
    const until = unknown.get(token)
    if (until === undefined) return undefined
    if (until > now) return null
    unknown.delete(token)
    return undefined
  }

  function lookup(token: string, now: number, from = apiKeys): Promise<ApiKeyRecord | undefined> {
    const under = looking.get(token)
    // Not while the store refuses at once: a lookup begun before the database went
    // silent waits on it until its timeout, and every request of the key would wait
    // with it. A lookup of its own is refused at once, as any other call is.
    if (under && !storeRefusing()) return under
    const askedAt = forgotten
    const pending = from
      .findByHash(hashApiKey(token))
      .then((stored) => {
        const key = stored && toApiKeyRecord(stored)
        // A later lookup of this token began (the store refused at once meanwhile, so it did
        // not join this one): what it read, or will read, is fresher than this.
        if (looking.get(token) !== pending) return key
        cache.delete(token) // re-inserted last: the oldest entries go first when the cache is full
        unknown.delete(token)
        // A key changed here while it was read (forget) may have been read as it was: answered, not kept.
        if (key && askedAt !== forgotten) return key
        if (key) {
          if (cache.size >= maxCached) cache.delete(cache.keys().next().value as string)
          cache.set(token, { key, until: now + cacheMs })
        } else {
          if (unknown.size >= maxUnknown) unknown.delete(unknown.keys().next().value as string)
          unknown.set(token, now + cacheMs)
        }
        return key
      })
      .finally(() => {
        if (looking.get(token) === pending) looking.delete(token)
      })
    looking.set(token, pending)
    return pending
  }

  function touch(key: ApiKeyRecord, now: number) {
    if (now - (lastTouched.get(key.id) ?? 0) < LAST_USED_GRANULARITY_MS) return
    lastTouched.set(key.id, now)
    background.touch(key.id, now).catch((error: unknown) => onError(error, 'could not record when an API key was last used'))
  }

  /** The key's record, undefined when the store does not know it, or why its format is refused. */
  async function checkAndLookup(token: string, now: number): Promise<ApiKeyRecord | undefined | string> {
    const parsed = parseApiKey(token)
    if (!parsed.ok) {
      return 'The API key is malformed: keys start with ps_live_ or ps_test_ and end in a checksum; check it was copied whole.'
    }
    if (parsed.environment !== environment) {
      return `This is a ${parsed.environment} key (ps_${parsed.environment}_…); this server accepts ${environment} keys (ps_${environment}_…).`
    }
    return lookup(token, now)
  }

  function verdict(key: ApiKeyRecord | null | undefined | string, now: number, cachedAs?: 'stale' | 'due'): AuthResult {
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
    const result: AuthResult = { ok: true, key }
    if (cachedAs) result[cachedAs] = true
    return result
  }

  /** The Bearer token, or why the header is refused. */
  function tokenOf(header: string): string | AuthResult {
    // The form every client sends, without the regular expression; anything else is parsed.
    if (header.startsWith('Bearer ')) {
      const token = header.slice(7)
      if (cache.has(token)) return token
    }
    return BEARER.exec(header)?.[1] ?? { ok: false, missing: false, message: 'The Authorization header must be "Bearer <key>".' }
  }

  return {
    /**
     * The answer when it needs no store lookup (no key, a malformed header, a key cached
     * as known or unknown); undefined otherwise. A known key's record past its lifetime is
     * answered `stale` (fit to refuse it with a ban, which is decided before the store is
     * asked again), one due for a refresh `due`. Nothing is looked up here: a record is
     * refreshed for a request it let through (refresh()), so a banned key's flood does not
     * keep its record fresh.
     */
    peek(header: string | undefined): AuthResult | undefined {
      if (!header) return MISSING
      const token = tokenOf(header)
      if (typeof token !== 'string') return token
      const now = clock.now()
      const hit = cache.get(token)
      if (hit === undefined || hit.until > now) {
        const known = cached(token, now, hit)
        return known === undefined ? undefined : verdict(known, now, hit && hit.until - now <= refreshAheadMs ? 'due' : undefined)
      }
      // Past its lifetime, a record still refuses a key revoked or expired: both are final
      // (a revocation is never undone, and a roll only ever moves an expiry earlier), so
      // a dead key's flood is not looked up once a lifetime. A key disabled then may be
      // enabled since: that refusal is asked of the store again.
      const stale = verdict(hit.key, now, 'stale')
      return stale.ok || FINAL.has(keyState(hit.key, now)) ? stale : undefined
    },
    /**
     * Looks the key up again in the background (peek() said `due`), so that under steady
     * use no request waits for the store. The entry's lifetime, not the refresh, bounds
     * how long a revocation takes (D6).
     */
    refresh(header: string): void {
      const token = tokenOf(header)
      if (typeof token !== 'string' || looking.has(token)) return
      lookup(token, clock.now(), background).catch((error: unknown) => onError(error, 'could not refresh a cached API key'))
    },
    /**
     * Drops the records of keys changed through this process (a roll, a revocation, a
     * change of scopes or of enabled), so that their next request here sees the change
     * ("grace 0 stops it now"); other processes (other instances, other workers) see it
     * within the cache's lifetime. A scan:
     * key changes are rare, and the cache is keyed by token, not id.
     */
    forget(keyIds: readonly number[]): void {
      forgotten++
      const ids = new Set(keyIds)
      for (const [token, entry] of cache) if (ids.has(entry.key.id)) cache.delete(token)
    },
    /** The answer, looking the key up in the store when it is not cached. */
    async authenticate(header: string | undefined): Promise<AuthResult> {
      if (!header) return MISSING
      const token = tokenOf(header)
      if (typeof token !== 'string') return token
      const now = clock.now()
      const hit = cached(token, now)
      return verdict(hit === undefined ? await checkAndLookup(token, now) : hit, now)
    },
  }
}

export type Authenticator = ReturnType<typeof createAuthenticator>
