// A key's usage rows (per hour and outcome, as stored) gathered into buckets of an
// hour or a UTC day: what GET /v1/usage/history answers and `petstore keys usage`
// prints.
import type { UsageCount } from '../db/usage-store.js'
import { USAGE_OUTCOMES, type UsageOutcome } from '../vocabulary/usage.js'

export const HOUR_MS = 3_600_000
export const DAY_MS = 24 * HOUR_MS

export type UsageBucketCounts = { start: string } & Record<UsageOutcome, number>

/** One bucket per `sizeMs` that has requests, oldest first (rows come by hour). */
export function bucketsOf(rows: readonly UsageCount[], sizeMs: number): UsageBucketCounts[] {
  const buckets = new Map<number, UsageBucketCounts>()
  for (const row of rows) {
    const start = row.hour - (row.hour % sizeMs)
    let bucket = buckets.get(start)
    if (!bucket) {
      bucket = { start: new Date(start).toISOString(), ...(Object.fromEntries(USAGE_OUTCOMES.map((outcome) => [outcome, 0])) as Record<UsageOutcome, number>) }
      buckets.set(start, bucket)
    }
    bucket[row.outcome] += row.requests
  }
  return [...buckets.values()]
}
