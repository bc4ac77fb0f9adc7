// Counters in this process's memory: exact for one instance. Synchronous inside,
// so concurrent requests cannot interleave between the check and the count.
import type { Clock } from '../clock.js'
import { DAY_MS, MINUTE_MS, type HitRequest, type HitResult, type LocalCounterStore, type PeekResult } from './counter-store.js'

interface Counters {
  minute: number
  minuteCount: number
  refused: number
  day: number
  dayCount: number
  bannedUntil: number
}

/** Above this many identities, entries whose windows and ban have all passed are dropped. */
const SWEEP_ABOVE = 10_000

export function createMemoryCounterStore(clock: Clock): LocalCounterStore {
  const counters = new Map<string, Counters>()
  let sweepAt = SWEEP_ABOVE

  function sweep(now: number, minute: number) {
    for (const [identity, c] of counters) {
      if (c.minute < minute && c.day < Math.floor(now / DAY_MS) && c.bannedUntil <= now) counters.delete(identity)
    }
    sweepAt = Math.max(SWEEP_ABOVE, counters.size * 2)
  }

  function hitNow({ identity, limits, banAfter, banMs }: HitRequest): HitResult {
    const now = clock.now()
    const minute = Math.floor(now / MINUTE_MS)
    const day = Math.floor(now / DAY_MS)
    if (counters.size >= sweepAt) sweep(now, minute)

    let c = counters.get(identity)
    if (!c) {
      c = { minute, minuteCount: 0, refused: 0, day, dayCount: 0, bannedUntil: 0 }
      counters.set(identity, c)
    }
    if (c.minute !== minute) Object.assign(c, { minute, minuteCount: 0, refused: 0 })
    if (c.day !== day) Object.assign(c, { day, dayCount: 0 })

    const result = (outcome: HitResult['outcome']): HitResult => ({
      outcome,
      now,
      minuteCount: c.minuteCount,
      dayCount: c.dayCount,
      bannedUntil: c.bannedUntil,
    })
    if (c.bannedUntil > now) return result('banned')
    if (c.minuteCount < limits.perMinute && c.dayCount < limits.perDay) {
      c.minuteCount++
      c.dayCount++
      return result('served')
    }
    c.refused++
    if (c.refused > banAfter) {
      c.bannedUntil = now + banMs
      c.refused = 0 // a lifted ban starts the count afresh
      return result('banned')
    }
    return result('limited')
  }

  function peek(identity: string): PeekResult {
    const now = clock.now()
    const c = counters.get(identity)
    if (!c) return { now, minuteCount: 0, dayCount: 0, bannedUntil: 0 }
    return {
      now,
      minuteCount: c.minute === Math.floor(now / MINUTE_MS) ? c.minuteCount : 0,
      dayCount: c.day === Math.floor(now / DAY_MS) ? c.dayCount : 0,
      bannedUntil: c.bannedUntil > now ? c.bannedUntil : 0,
    }
  }

  return {
    hitNow,
    hit: async (request) => hitNow(request),
    peek: async (identity) => peek(identity),
    async unban(identity) {
      const c = counters.get(identity)
      if (!c || c.bannedUntil <= clock.now()) return false
      c.bannedUntil = 0
      return true
    },
    close: async () => counters.clear(),
  }
}
