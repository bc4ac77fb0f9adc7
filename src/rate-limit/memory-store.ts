// Counters in this process's memory: exact for one instance. Synchronous inside,
// so concurrent requests cannot interleave between the check and the count.
import type { Clock } from '../clock.js'
import { DAY_MS, MINUTE_MS, type HitRequest, type HitResult, type LocalCounterStore, type PeekResult } from './counter-store.js'

interface Counters {
  minute: number
  minuteCount: number
  day: number
  dayCount: number
}

/** One ban identity's refusals in its minute, and its ban. */
interface Refusals {
  minute: number
  refused: number
  bannedUntil: number
}

/** Above this many identities, entries whose windows and ban have all passed are dropped. */
const SWEEP_ABOVE = 10_000
/**
 * Addresses counted at most (`ip:` identities, the callers without a valid key): past it,
 * a sweep forgets those whose minute has passed, daily count and all, down to half. The
 * daily window kept every address seen until midnight UTC (about 160 bytes each), so
 * requests from many addresses grew the heap without bound; a flood from this many
 * addresses forgets their daily counts, never a minute's count or a ban. (So about this
 * many are kept, and those of the minute under way beside them.)
 */
export const MAX_ADDRESSES = 200_000

export function createMemoryCounterStore(clock: Clock, { maxAddresses = MAX_ADDRESSES }: { maxAddresses?: number } = {}): LocalCounterStore {
  const counters = new Map<string, Counters>()
  const refusals = new Map<string, Refusals>()
  let sweepAt = SWEEP_ABOVE

  function sweep(now: number, minute: number) {
    const day = Math.floor(now / DAY_MS)
    let addresses = 0
    for (const [identity, c] of counters) {
      if (c.minute < minute && c.day < day) counters.delete(identity)
      else if (identity.startsWith('ip:')) addresses++
    }
    // In the order they were first seen: the oldest addresses go first.
    if (addresses > maxAddresses) {
      for (const [identity, c] of counters) {
        if (addresses <= maxAddresses / 2) break
        if (c.minute < minute && identity.startsWith('ip:')) {
          counters.delete(identity)
          addresses--
        }
      }
    }
    for (const [identity, r] of refusals) if (r.minute < minute && r.bannedUntil <= now) refusals.delete(identity)
    // Doubling, but never more than half the cap beyond: then a sweep finds it passed.
    sweepAt = Math.max(SWEEP_ABOVE, Math.min((counters.size + refusals.size) * 2, counters.size + refusals.size + maxAddresses / 2 + 1))
  }

  function hitNow({ identity, banIdentity, limits, banAfter, banMs }: HitRequest): HitResult {
    const now = clock.now()
    const minute = Math.floor(now / MINUTE_MS)
    const day = Math.floor(now / DAY_MS)
    if (counters.size + refusals.size >= sweepAt) sweep(now, minute)

    let c = counters.get(identity)
    if (!c) {
      c = { minute, minuteCount: 0, day, dayCount: 0 }
      counters.set(identity, c)
    }
    if (c.minute !== minute) Object.assign(c, { minute, minuteCount: 0 })
    if (c.day !== day) Object.assign(c, { day, dayCount: 0 })
    const r = refusals.get(banIdentity)

    const result = (outcome: HitResult['outcome'], bannedUntil = 0): HitResult => ({ outcome, now, minuteCount: c.minuteCount, dayCount: c.dayCount, bannedUntil })
    if (r && r.bannedUntil > now) return result('banned', r.bannedUntil)
    if (c.minuteCount < limits.perMinute && c.dayCount < limits.perDay) {
      c.minuteCount++
      c.dayCount++
      return result('served')
    }
    const refused = r ?? { minute, refused: 0, bannedUntil: 0 }
    if (!r) refusals.set(banIdentity, refused)
    if (refused.minute !== minute) Object.assign(refused, { minute, refused: 0 })
    refused.refused++
    if (refused.refused > banAfter) {
      refused.bannedUntil = now + banMs
      refused.refused = 0 // a lifted ban starts the count afresh
      return result('banned', refused.bannedUntil)
    }
    return result('limited')
  }

  function peek(identity: string, banIdentity: string): PeekResult {
    const now = clock.now()
    const c = counters.get(identity)
    const bannedUntil = refusals.get(banIdentity)?.bannedUntil ?? 0
    return {
      now,
      minuteCount: c?.minute === Math.floor(now / MINUTE_MS) ? c.minuteCount : 0,
      dayCount: c?.day === Math.floor(now / DAY_MS) ? c.dayCount : 0,
      bannedUntil: bannedUntil > now ? bannedUntil : 0,
    }
  }

  return {
    hitNow,
    peekNow: peek,
    hit: async (request) => hitNow(request),
    peek: async (identity, banIdentity) => peek(identity, banIdentity),
    async unban(_identity, banIdentity) {
      const r = refusals.get(banIdentity)
      if (!r || r.bannedUntil <= clock.now()) return false
      r.bannedUntil = 0
      return true
    },
    close: async () => {
      counters.clear()
      refusals.clear()
    },
  }
}
