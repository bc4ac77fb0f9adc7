import type { Clock } from '../clock.js'
import type { ApiKeysStore } from '../db/api-keys-store.js'
import { toApiKeyRecord, type ApiKeyRecord } from './api-key-record.js'
import { displayPrefix, generateApiKey, hashApiKey, type KeyEnvironment } from './key-format.js'
import type { Limits, Plan } from './plans.js'

export interface IssueKeyOptions {
  name: string
  plan: Plan
  custom: Limits | null
  environment: KeyEnvironment
}

/** Creates a key. The secret is returned this once; the store keeps only its hash. */
export async function issueApiKey(
  apiKeys: Pick<ApiKeysStore, 'insert'>,
  clock: Clock,
  options: IssueKeyOptions,
): Promise<{ secret: string; record: ApiKeyRecord }> {
  const secret = generateApiKey(options.environment)
  const stored = await apiKeys.insert(
    { name: options.name, plan: options.plan, custom: options.custom, prefix: displayPrefix(secret), hash: hashApiKey(secret) },
    clock.now(),
  )
  return { secret, record: toApiKeyRecord(stored) }
}
