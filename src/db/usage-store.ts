// Requests per API key, per UTC hour and per outcome: the usage history (an account's
// is the sum of its keys'). The service adds to it in batches
// (api-keys/usage-recorder.ts), never a write per request.
// Written once for both databases: sql/usage.ts.

import type { UsageOutcome } from '../vocabulary/usage.js'

export interface UsageRow {
  apiKeyId: number
  /** Unix ms of the start of the UTC hour. */
  hour: number
  outcome: UsageOutcome
  requests: number
}

/** Requests in one hour with one outcome, of every key asked for together. */
export type UsageCount = Omit<UsageRow, 'apiKeyId'>

/** Whose usage: an account's (all its keys together), or one key of it. */
export interface UsageScope {
  accountId: number
  keyId?: number
}

export interface UsageStore {
  /** Adds each row's requests to the stored count of its key, hour and outcome. */
  add(rows: readonly UsageRow[]): Promise<void>
  /** The counts of `scope` with `from <= hour < to`, by hour, then outcome. */
  history(scope: UsageScope, from: number, to: number): Promise<UsageCount[]>
  /** Deletes the rows of hours before `before`. */
  purge(before: number): Promise<void>
}
