// The usage history as callers read it: the counts of an account, or of one key of
// it, over a range, gathered into hour or day buckets. The range rules live here once,
// for GET /v1/usage/history, GET /v1/keys/{id}/usage, `petstore keys usage` and
// `petstore accounts show`.
import type { UsageCount, UsageScope } from '../db/usage-store.js'
import { USAGE_KEPT_DAYS, USAGE_KEPT_MS } from '../vocabulary/usage.js'
import { bucketsOf, DAY_MS, HOUR_MS, type UsageBucketCounts } from './buckets.js'

export interface HistoryRange {
  /** Unix ms; rounded down to the bucket. Default: a day (hours) or 30 days (days) before `to`. */
  from?: number | undefined
  /** Unix ms, exclusive. Default: now. */
  to?: number | undefined
  granularity: 'hour' | 'day'
}

/**
 * Where the counts come from: in a server, the usage recorder (the store's counts plus
 * this instance's not yet written); in the CLI, the store alone.
 */
export type UsageCounts = (scope: UsageScope, from: number, to: number) => Promise<UsageCount[]>

/** A range the history cannot answer; `field` is the parameter to blame. */
export class UsageRangeError extends Error {
  override name = 'UsageRangeError'
  constructor(
    message: string,
    readonly field: 'from',
    readonly reason: string,
  ) {
    super(message)
  }
}

/** The buckets of `scope` in `range`, oldest first; empty ones are left out. */
export async function usageHistory(counts: UsageCounts, scope: UsageScope, range: HistoryRange, now: number): Promise<UsageBucketCounts[]> {
  const size = range.granularity === 'day' ? DAY_MS : HOUR_MS
  const to = range.to ?? now
  const fromRaw = range.from ?? to - (range.granularity === 'day' ? 30 * DAY_MS : DAY_MS)
  const from = fromRaw - (fromRaw % size)
  if (from >= to) throw new UsageRangeError('parameter "from" must be before "to".', 'from', 'must be before to')
  if (to - from > USAGE_KEPT_MS + DAY_MS) {
    throw new UsageRangeError(`The range from "from" to "to" is at most ${USAGE_KEPT_DAYS} days: history is kept ${USAGE_KEPT_DAYS} days.`, 'from', `at most ${USAGE_KEPT_DAYS} days before to`)
  }
  return bucketsOf(await counts(scope, from, to), size)
}
