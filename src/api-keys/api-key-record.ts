// An API key as the service knows it: never the secret, only its display prefix,
// with its account's plan and limits and the scopes it holds. The store keeps the
// rows (db/api-keys-store.ts); what they mean is said here.
import type { StoredApiKey } from '../db/api-keys-store.js'
import { limitsFor, type Limits, type Plan } from '../vocabulary/plans.js'
import { storedScopes, type Scope } from '../vocabulary/scopes.js'

export interface ApiKeyRecord {
  id: number
  /** The account that owns the key and everything it makes (decision D11). */
  accountId: number
  name: string
  /** The account's plan and its limits: every key of the account shares them. */
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
  /** Disabled by the operator, who alone enables it again. */
  disabledByOperator: boolean
  /** When the account was disabled: every key of it is refused. */
  accountDisabledAt: string | null
  /** The key a roll made from this one. */
  replacedBy: number | null
  /** The key that made this one over the API; null: the operator. */
  createdBy: number | null
  /**
   * Who the rate limiter counts: the account, by id and creation time (a database
   * created again hands out the same ids, and its accounts must not inherit counters
   * from a Redis that outlived it). Every key of the account shares its windows.
   */
  counterIdentity: string
  /** Who a ban falls on: the key alone, as the spec says ("a temporary ban of the API key"). */
  banIdentity: string
}

/** Where a key stands, ban aside (the limiter knows bans: key-admin.ts adds them). */
export type KeyState = 'active' | 'disabled' | 'expired' | 'revoked'

export function toApiKeyRecord(stored: StoredApiKey): ApiKeyRecord {
  const { account } = stored
  const plan = account.plan as Plan
  const createdAt = iso(stored.createdAt)
  return {
    id: stored.id,
    accountId: account.id,
    name: stored.name,
    plan,
    prefix: stored.prefix,
    limits: limitsFor(plan, account.custom ?? {}),
    scopes: storedScopes(stored.scopes),
    createdAt,
    lastUsedAt: stored.lastUsedAt === null ? null : iso(stored.lastUsedAt),
    revokedAt: stored.revokedAt === null ? null : iso(stored.revokedAt),
    expiresAt: stored.expiresAt === null ? null : iso(stored.expiresAt),
    disabledAt: stored.disabledAt === null ? null : iso(stored.disabledAt),
    disabledByOperator: stored.disabledByOperator,
    accountDisabledAt: account.disabledAt === null ? null : iso(account.disabledAt),
    replacedBy: stored.replacedBy,
    createdBy: stored.createdBy,
    counterIdentity: `account:${account.id}@${iso(account.createdAt)}`,
    banIdentity: `key:${stored.id}@${createdAt}`,
  }
}

/** The key's state at `now` (Unix ms): revoked outranks expired, expired outranks disabled (the key's or its account's). */
export function keyState(key: ApiKeyRecord, now: number): KeyState {
  if (key.revokedAt !== null) return 'revoked'
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= now) return 'expired'
  if (key.disabledAt !== null || key.accountDisabledAt !== null) return 'disabled'
  return 'active'
}

const iso = (ms: number) => new Date(ms).toISOString()
