// Requests per API key, per UTC hour and per outcome: the usage history. An account's
// is the sum of its keys', kept apart as they are added (so that reading it costs the
// same however many keys the account has had). The service adds to it in batches
// (usage/recorder.ts), never a write per request.
// Written once for both databases: sql/usage.ts.

import type { UsageOutcome } from '../vocabulary/usage.js'

export interface UsageRow {
  apiKeyId: number
  /** The key's account, whose counts the row adds to as well. */
  accountId: number
  /** Unix ms of the start of the UTC hour. */
  hour: number
  outcome: UsageOutcome
  requests: number
}

/** Requests in one hour with one outcome, of every key asked for together. */
export type UsageCount = Omit<UsageRow, 'apiKeyId' | 'accountId'>

/** Whose usage: an account's (all its keys together), or one key of it. */
export interface UsageScope {
  accountId: number
  keyId?: number
}

export interface UsageStore {
  /** Adds each row's requests to the stored counts of its key, and of its account, for its hour and outcome: all of them, or none. */
  add(rows: readonly UsageRow[]): Promise<void>
  /** The counts of `scope` with `from <= hour < to`, by hour, then outcome. */
  history(scope: UsageScope, from: number, to: number): Promise<UsageCount[]>
  /** Deletes the rows of hours before `before`. */
  purge(before: number): Promise<void>
}
