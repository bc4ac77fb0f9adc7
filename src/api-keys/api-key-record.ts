// An API key as the service knows it: never the secret, only its display prefix,
// with the limits its plan gives it. The store keeps the rows (db/api-keys-store.ts);
// what they mean is said here.
import type { StoredApiKey } from '../db/api-keys-store.js'
import { limitsFor, type Limits, type Plan } from './plans.js'

export interface ApiKeyRecord {
  id: number
  name: string
  plan: Plan
  /** The non-secret start of the key, e.g. `ps_test_AbCd`. */
  prefix: string
  limits: Limits
  createdAt: string
  lastUsedAt: string | null
  revokedAt: string | null
}

export function toApiKeyRecord(stored: StoredApiKey): ApiKeyRecord {
  const plan = stored.plan as Plan
  return {
    id: stored.id,
    name: stored.name,
    plan,
    prefix: stored.prefix,
    limits: limitsFor(plan, stored.custom ?? {}),
    createdAt: iso(stored.createdAt),
    lastUsedAt: stored.lastUsedAt === null ? null : iso(stored.lastUsedAt),
    revokedAt: stored.revokedAt === null ? null : iso(stored.revokedAt),
  }
}

const iso = (ms: number) => new Date(ms).toISOString()
