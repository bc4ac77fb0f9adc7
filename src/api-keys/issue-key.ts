import type { Clock } from '../clock.js'
import type { ApiKeyRecord, ApiKeyRepository } from '../db/api-key-repository.js'
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
  apiKeys: Pick<ApiKeyRepository, 'insert'>,
  clock: Clock,
  options: IssueKeyOptions,
): Promise<{ secret: string; record: ApiKeyRecord }> {
  const secret = generateApiKey(options.environment)
  const record = await apiKeys.insert(
    { name: options.name, plan: options.plan, custom: options.custom, prefix: displayPrefix(secret), hash: hashApiKey(secret) },
    clock.now(),
  )
  return { secret, record }
}
