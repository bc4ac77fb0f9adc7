// Turns an Authorization header into an API key record, or a reason it is refused.
// Records are cached for a few seconds so the hot path rarely touches the store;
// the cache's lifetime bounds how long a revocation or plan change takes to reach
// a running instance (decision D6: within 5 seconds).
import type { Clock } from '../clock.js'
import type { ApiKeyRecord, ApiKeyRepository } from '../db/api-key-repository.js'
import { hashApiKey, parseApiKey, type KeyEnvironment } from './key-format.js'

export type AuthResult =
  | { ok: true; key: ApiKeyRecord }
  | { ok: false; missing: boolean; message: string }

export interface AuthenticatorOptions {
  apiKeys: Pick<ApiKeyRepository, 'findByHash' | 'touch'>
  clock: Clock
  environment: KeyEnvironment
  cacheMs?: number
  maxCached?: number
  onError?: (error: unknown) => void
}

const LAST_USED_GRANULARITY_MS = 60_000
// RFC 6750 / RFC 9110: the scheme is case-insensitive, the token is a b64token.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

export function createAuthenticator({
  apiKeys,
  clock,
  environment,
  cacheMs = 3_000,
  maxCached = 10_000,
  onError = () => {},
}: AuthenticatorOptions) {
  const cache = new Map<string, { key: ApiKeyRecord | undefined; until: number }>()
  const lastTouched = new Map<number, number>()

  async function lookup(hash: string, now: number): Promise<ApiKeyRecord | undefined> {
    const hit = cache.get(hash)
    if (hit && hit.until > now) return hit.key
    const key = await apiKeys.findByHash(hash)
    if (cache.size >= maxCached) cache.delete(cache.keys().next().value as string)
    // Unknown keys are not remembered: a key created a moment ago must work at once.
    if (key) cache.set(hash, { key, until: now + cacheMs })
    else cache.delete(hash)
    return key
  }

  function touch(key: ApiKeyRecord, now: number) {
    if (now - (lastTouched.get(key.id) ?? 0) < LAST_USED_GRANULARITY_MS) return
    lastTouched.set(key.id, now)
    apiKeys.touch(key.id, now).catch(onError)
  }

  return {
    async authenticate(header: string | undefined): Promise<AuthResult> {
      if (!header) {
        return { ok: false, missing: true, message: 'Missing API key: send it as "Authorization: Bearer <key>".' }
      }
      const token = BEARER.exec(header)?.[1]
      if (!token) {
        return { ok: false, missing: false, message: 'The Authorization header must be "Bearer <key>".' }
      }
      const parsed = parseApiKey(token)
      if (!parsed.ok) {
        return {
          ok: false,
          missing: false,
          message: 'The API key is malformed: keys start with ps_live_ or ps_test_ and end in a checksum; check it was copied whole.',
        }
      }
      if (parsed.environment !== environment) {
        return {
          ok: false,
          missing: false,
          message: `This is a ${parsed.environment} key (ps_${parsed.environment}_…); this server accepts ${environment} keys (ps_${environment}_…).`,
        }
      }
      const now = clock.now()
      const key = await lookup(hashApiKey(token), now)
      if (!key) return { ok: false, missing: false, message: 'The API key is not recognised.' }
      if (key.revokedAt) return { ok: false, missing: false, message: 'The API key has been revoked.' }
      touch(key, now)
      return { ok: true, key }
    },
  }
}

export type Authenticator = ReturnType<typeof createAuthenticator>
