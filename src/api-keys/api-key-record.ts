// An API key as the service knows it: never the secret, only its display prefix,
// with the limits its plan gives it and the scopes it holds. The store keeps the rows
// (db/api-keys-store.ts); what they mean is said here.
import type { StoredApiKey } from '../db/api-keys-store.js'
import { limitsFor, type Limits, type Plan } from './plans.js'
import { storedScopes, type Scope } from './scopes.js'

export interface ApiKeyRecord {
  id: number
  name: string
  plan: Plan
  /** The non-secret start of the key, e.g. `ps_test_AbCd`. */
  prefix: string
  limits: Limits
  scopes: Scope[]
  createdAt: string
  lastUsedAt: string | null
  revokedAt: string | null
  expiresAt: string | null
  disabledAt: string | null
  /** The key a roll made from this one. */
  replacedBy: number | null
  /**
   * Who the rate limiter counts: the key's id and creation time (a database created
   * again hands out the same ids, and its keys must not inherit counters from a Redis
   * that outlived it), or those of the key it was rolled from, so both share one limit.
   */
  counterIdentity: string
}

/** Where a key stands, ban aside (the limiter knows bans: key-admin.ts adds them). */
export type KeyState = 'active' | 'disabled' | 'expired' | 'revoked'

export function toApiKeyRecord(stored: StoredApiKey): ApiKeyRecord {
  const plan = stored.plan as Plan
  const createdAt = iso(stored.createdAt)
  return {
    id: stored.id,
    name: stored.name,
    plan,
    prefix: stored.prefix,
    limits: limitsFor(plan, stored.custom ?? {}),
    scopes: storedScopes(stored.scopes),
    createdAt,
    lastUsedAt: stored.lastUsedAt === null ? null : iso(stored.lastUsedAt),
    revokedAt: stored.revokedAt === null ? null : iso(stored.revokedAt),
    expiresAt: stored.expiresAt === null ? null : iso(stored.expiresAt),
    disabledAt: stored.disabledAt === null ? null : iso(stored.disabledAt),
    replacedBy: stored.replacedBy,
    counterIdentity: stored.counterIdentity ?? `key:${stored.id}@${createdAt}`,
  }
}

/** The key's state at `now` (Unix ms): revoked outranks expired, expired outranks disabled. */
export function keyState(key: ApiKeyRecord, now: number): KeyState {
  if (key.revokedAt !== null) return 'revoked'
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= now) return 'expired'
  if (key.disabledAt !== null) return 'disabled'
  return 'active'
}

const iso = (ms: number) => new Date(ms).toISOString()
