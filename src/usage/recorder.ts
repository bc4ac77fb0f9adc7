// Usage history without a write per request: each request adds to a count in memory
// (per key, UTC hour and outcome), and the counts go to the store in one transaction
// every few seconds, added to what other instances wrote. A crash loses at most the
// counts of the last interval; a failed write keeps them for the next one.
import type { Clock } from '../clock.js'
import { HOUR_MS } from './buckets.js'
import type { UsageCount, UsageRow, UsageScope, UsageStore } from '../db/usage-store.js'
import { USAGE_OUTCOMES, type UsageOutcome } from '../vocabulary/usage.js'

export const FLUSH_EVERY_MS = 5_000

export interface UsageRecorderOptions {
  usage: UsageStore
  /** Where the counts are written, by default usage: the store's background view (no request waits for the write), counted apart. */
  writes?: Pick<UsageStore, 'add'>
  clock: Clock
  flushEveryMs?: number
  onError?: (error: unknown) => void
}

const OUTCOME_INDEX: Readonly<Record<UsageOutcome, number>> = Object.fromEntries(USAGE_OUTCOMES.map((outcome, i) => [outcome, i])) as Record<UsageOutcome, number>

/**
 * Counts not yet in the store, by key id (with the key's account, for an account's
 * history), then hour: one number per outcome (USAGE_OUTCOMES' order). Numbers all the
 * way, on the request path.
 */
type Pending = Map<number, { accountId: number; byHour: Map<number, number[]> }>

export function createUsageRecorder({ usage, writes = usage, clock, flushEveryMs = FLUSH_EVERY_MS, onError = () => {} }: UsageRecorderOptions) {
  let pending: Pending = new Map()
  let flushing: Promise<void> | undefined

  const rowsOf = (counts: Pending): UsageRow[] =>
    [...counts].flatMap(([apiKeyId, { accountId, byHour }]) =>
      [...byHour].flatMap(([hour, perOutcome]) =>
        USAGE_OUTCOMES.flatMap((outcome, i) => (perOutcome[i] ? [{ apiKeyId, accountId, hour, outcome, requests: perOutcome[i] }] : [])),
      ),
    )

  async function flush(): Promise<void> {
    if (flushing) return flushing
    if (pending.size === 0) return
    const taken = pending
    pending = new Map()
    flushing = writes
      .add(rowsOf(taken))
      .catch((error: unknown) => {
        // Back into the counts, added to whatever arrived meanwhile: written next time.
        for (const [apiKeyId, { accountId, byHour }] of taken) {
          for (const [hour, perOutcome] of byHour) USAGE_OUTCOMES.forEach((outcome, i) => perOutcome[i] && add(apiKeyId, accountId, hour, outcome, perOutcome[i]))
        }
        onError(error)
      })
      .finally(() => {
        flushing = undefined
      })
    return flushing
  }

  function add(apiKeyId: number, accountId: number, hour: number, outcome: UsageOutcome, requests: number) {
    let entry = pending.get(apiKeyId)
    if (!entry) pending.set(apiKeyId, (entry = { accountId, byHour: new Map() }))
    const { byHour } = entry
    let perOutcome = byHour.get(hour)
    if (!perOutcome) byHour.set(hour, (perOutcome = USAGE_OUTCOMES.map(() => 0)))
    perOutcome[OUTCOME_INDEX[outcome]]! += requests
  }

  const timer = setInterval(() => void flush(), flushEveryMs).unref()

  return {
    record(key: { id: number; accountId: number }, outcome: UsageOutcome): void {
      const now = clock.now()
      add(key.id, key.accountId, now - (now % HOUR_MS), outcome, 1)
    },
    /** The counts of an account, or one key of it, with `from <= hour < to`: the store's, with this instance's not yet written added in. */
    async history(scope: UsageScope, from: number, to: number): Promise<UsageCount[]> {
      const stored = await usage.history(scope, from, to)
      const mine = [...pending].filter(([keyId, { accountId }]) => (scope.keyId === undefined ? accountId === scope.accountId : keyId === scope.keyId))
      const unwritten = rowsOf(new Map(mine)).filter((row) => row.hour >= from && row.hour < to)
      const merged = new Map<string, UsageCount>(stored.map((row) => [`${row.hour}:${row.outcome}`, { ...row }]))
      for (const row of unwritten) {
        const known = merged.get(`${row.hour}:${row.outcome}`)
        if (known) known.requests += row.requests
        else merged.set(`${row.hour}:${row.outcome}`, { hour: row.hour, outcome: row.outcome, requests: row.requests })
      }
      return [...merged.values()].sort((a, b) => a.hour - b.hour || a.outcome.localeCompare(b.outcome))
    },
    flush,
    /** Writes what is left; on SIGTERM, before the store closes. */
    async close(): Promise<void> {
      clearInterval(timer)
      await flushing
      await flush()
    },
  }
}

export type UsageRecorder = ReturnType<typeof createUsageRecorder>
