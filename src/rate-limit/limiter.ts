// Decision D7 on top of a counter store: which window a response reports, and when
// a refused caller may retry. It returns results; the /v1 guard turns them into
// headers and statuses (src/plugins/v1-guard.ts). No HTTP here.
import type { Limits } from '../vocabulary/plans.js'
import { DAY_MS, MINUTE_MS, windowEnds, type HitRequest, type HitResult, type LocalCounterStore } from './counter-store.js'
import type { FailoverCounterStore } from './failover-store.js'

export interface WindowState {
  name: 'minute' | 'day'
  limit: number
  /** Requests left in the window after this one. */
  remaining: number
  /** Unix ms when the window ends. */
  resetsAt: number
}

export interface RateLimitCount {
  outcome: 'served' | 'limited' | 'banned'
  limits: Limits
  /** The time the counters used, Unix ms. */
  now: number
  minute: WindowState
  day: WindowState
  /**
   * The window to report. Served: the one with the fewest requests left (ties: the
   * minute). Limited: the one that refused; when both are full, the one that frees up
   * last, since only then can the request succeed.
   */
  reported: WindowState
  /** Unix ms from which a refused caller may try again (the window's end, or the ban's). */
  retryAt?: number
  /** Unix ms when the ban ends, when banned. */
  bannedUntil?: number
}

/** The shared counters could not be reached and PETSTORE_REDIS_FAILURE=closed: nothing was counted. */
export interface RateLimitUnavailable {
  outcome: 'unavailable'
  reason: string
}

export type RateLimitResult = RateLimitCount | RateLimitUnavailable

/**
 * Who a request is: the identity its windows count (an account, or an address) and
 * the one a ban falls on (a key, or the same address).
 */
export interface Caller {
  counterIdentity: string
  banIdentity: string
}

export interface RateLimiter {
  check(caller: Caller, limits: Limits): Promise<RateLimitResult>
  /** The windows as they stand, counting nothing (GET /v1/usage, a key's status). */
  peek(caller: Caller, limits: Limits): Promise<RateLimitCount>
  /** Lifts a ban on every instance (with Redis) or on this one; true when there was one. */
  unban(caller: Caller): Promise<boolean>
  /**
   * The caller's ban, when this instance knows of one without asking the shared
   * counters: a refusal decided before any lookup (the /v1 guard asks it before the
   * store is asked for an unknown key). Counts nothing, as a banned hit counts nothing.
   */
  bannedNow(caller: Caller, limits: Limits): RateLimitCount | undefined
  /** Present when the counters are in this process: the same check, answered at once. */
  checkNow: ((caller: Caller, limits: Limits) => RateLimitCount) | undefined
  /** True while the shared counters cannot be reached and this instance counts alone (or refuses). */
  readonly degraded: boolean
  /** The shared counters, for /readyz: absent when counters are in memory only. */
  shared: Pick<FailoverCounterStore, 'mode' | 'probe' | 'fallbacks'> | undefined
  ready(): Promise<void>
  close(): Promise<void>
}

export interface RateLimiterOptions {
  store: LocalCounterStore | FailoverCounterStore
  banAfter: number
  banSeconds: number
}

/**
 * How long a ban the shared counters reported is taken as known without asking them
 * again: an unban on another instance reaches this one within it.
 */
const SHARED_BAN_KNOWN_MS = 1_000
/** Bans remembered from the shared counters; beyond this many, the oldest are forgotten. */
const MAX_KNOWN_BANS = 10_000

export function createRateLimiter({ store, banAfter, banSeconds }: RateLimiterOptions): RateLimiter {
  const request = (caller: Caller, limits: Limits): HitRequest => ({ identity: caller.counterIdentity, banIdentity: caller.banIdentity, limits, banAfter, banMs: banSeconds * 1000 })
  const local = 'hitNow' in store ? store : undefined
  const shared = 'probe' in store ? store : undefined
  // Shared counters only (local ones are asked directly): the bans their answers
  // reported, by ban identity, with this process's time they were seen.
  const knownBans = new Map<string, { hit: HitResult; seenAt: number }>()

  function remember(caller: Caller, hit: HitResult) {
    if (hit.outcome !== 'banned' || local) return
    knownBans.delete(caller.banIdentity)
    if (knownBans.size >= MAX_KNOWN_BANS) knownBans.delete(knownBans.keys().next().value as string)
    knownBans.set(caller.banIdentity, { hit, seenAt: Date.now() })
  }

  function bannedNow(caller: Caller, limits: Limits): RateLimitCount | undefined {
    if (local) {
      const { now, minuteCount, dayCount, bannedUntil } = local.peekNow(caller.counterIdentity, caller.banIdentity)
      return bannedUntil > now ? count({ outcome: 'banned', now, minuteCount, dayCount, bannedUntil }, limits) : undefined
    }
    const known = knownBans.get(caller.banIdentity)
    if (!known) return undefined
    const elapsed = Date.now() - known.seenAt
    const now = known.hit.now + elapsed
    if (known.hit.bannedUntil <= now) {
      knownBans.delete(caller.banIdentity)
      return undefined
    }
    // Past a second, the shared counters are asked again (a ban lifted elsewhere is seen);
    // while they cannot be asked, a ban they reported holds to its end, not the fallback's
    // empty counters (a banned key was served again as soon as Redis blinked).
    if (elapsed >= SHARED_BAN_KNOWN_MS && !shared?.degraded) return undefined
    // The windows as they were seen, emptied when they have ended since.
    const sameMinute = Math.floor(now / MINUTE_MS) === Math.floor(known.hit.now / MINUTE_MS)
    const sameDay = Math.floor(now / DAY_MS) === Math.floor(known.hit.now / DAY_MS)
    return count({ ...known.hit, now, minuteCount: sameMinute ? known.hit.minuteCount : 0, dayCount: sameDay ? known.hit.dayCount : 0 }, limits)
  }

  return {
    async check(caller, limits) {
      // Local counters answer a ban in the hit itself, at no more cost.
      const banned = local ? undefined : bannedNow(caller, limits)
      if (banned) return banned
      const hit = await store.hit(request(caller, limits))
      if (hit.outcome === 'unavailable') return hit
      remember(caller, hit)
      // The shared counters were lost during this very hit: a ban they reported still holds.
      if (hit.outcome !== 'banned' && shared?.degraded) return bannedNow(caller, limits) ?? count(hit, limits)
      return count(hit, limits)
    },
    bannedNow,
    checkNow: local && ((caller, limits) => count(local.hitNow(request(caller, limits)), limits)),
    async peek(caller, limits) {
      const { now, minuteCount, dayCount, bannedUntil } = await store.peek(caller.counterIdentity, caller.banIdentity)
      const hit: HitResult = { outcome: bannedUntil > now ? 'banned' : 'served', now, minuteCount, dayCount, bannedUntil }
      remember(caller, hit)
      return count(hit, limits)
    },
    unban: (caller) => {
      knownBans.delete(caller.banIdentity)
      return store.unban(caller.counterIdentity, caller.banIdentity)
    },
    get degraded() {
      return shared?.degraded ?? false
    },
    shared,
    ready: () => shared?.ready() ?? Promise.resolve(),
    close: () => store.close(),
  }
}

/** Turns the counts a store returned into the windows' state. */
export function count(hit: HitResult, limits: Limits): RateLimitCount {
  const ends = windowEnds(hit.now)
  const minute: WindowState = { name: 'minute', limit: limits.perMinute, remaining: Math.max(0, limits.perMinute - hit.minuteCount), resetsAt: ends.minute }
  const day: WindowState = { name: 'day', limit: limits.perDay, remaining: Math.max(0, limits.perDay - hit.dayCount), resetsAt: ends.day }
  const { outcome, now } = hit
  if (outcome === 'limited') {
    const refusedBy = day.remaining === 0 ? day : minute
    return { outcome, limits, now, minute, day, reported: refusedBy, retryAt: refusedBy.resetsAt }
  }
  const reported = day.remaining < minute.remaining ? day : minute
  if (outcome === 'served') return { outcome, limits, now, minute, day, reported }
  return { outcome, limits, now, minute, day, reported, retryAt: hit.bannedUntil, bannedUntil: hit.bannedUntil }
}
