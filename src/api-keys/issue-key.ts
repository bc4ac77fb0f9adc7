import type { Clock } from '../clock.js'
import type { ApiKeysStore, NewStoredApiKey } from '../db/api-keys-store.js'
import { toApiKeyRecord, type ApiKeyRecord } from './api-key-record.js'
import { displayPrefix, generateApiKey, hashApiKey, type KeyEnvironment } from './key-format.js'
import type { Limits, Plan } from './plans.js'
import { formatScopes, SCOPE_PRESETS, type Scope } from './scopes.js'

export interface IssueKeyOptions {
  name: string
  plan: Plan
  custom: Limits | null
  environment: KeyEnvironment
  /** Default: the `all` preset, every scope but keys:*. */
  scopes?: readonly Scope[]
  /** Unix ms; default: never. */
  expiresAt?: number | null
}

/** A new secret, and the row that stores it (its hash, never the secret itself). */
export function newKeyRow(options: IssueKeyOptions & { counterIdentity?: string | null }): { secret: string; row: NewStoredApiKey } {
  const secret = generateApiKey(options.environment)
  return {
    secret,
    row: {
      name: options.name,
      plan: options.plan,
      custom: options.custom,
      prefix: displayPrefix(secret),
      hash: hashApiKey(secret),
      scopes: formatScopes(options.scopes ?? SCOPE_PRESETS.all),
      expiresAt: options.expiresAt ?? null,
      counterIdentity: options.counterIdentity ?? null,
    },
  }
}

/** Creates a key. The secret is returned this once; the store keeps only its hash. */
export async function issueApiKey(apiKeys: Pick<ApiKeysStore, 'insert'>, clock: Clock, options: IssueKeyOptions): Promise<{ secret: string; record: ApiKeyRecord }> {
  const { secret, row } = newKeyRow(options)
  return { secret, record: toApiKeyRecord(await apiKeys.insert(row, clock.now())) }
}
