// Decision D7 on top of a counter store: which window a response reports, and when
// a refused caller may retry. It returns results; the /v1 guard turns them into
// headers and statuses (src/plugins/v1-guard.ts). No HTTP here.
import type { Limits } from '../vocabulary/plans.js'
import { windowEnds, type HitRequest, type HitResult, type LocalCounterStore } from './counter-store.js'
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

export function createRateLimiter({ store, banAfter, banSeconds }: RateLimiterOptions): RateLimiter {
  const request = (caller: Caller, limits: Limits): HitRequest => ({ identity: caller.counterIdentity, banIdentity: caller.banIdentity, limits, banAfter, banMs: banSeconds * 1000 })
  const local = 'hitNow' in store ? store : undefined
  const shared = 'probe' in store ? store : undefined
  return {
    async check(caller, limits) {
      const hit = await store.hit(request(caller, limits))
      return hit.outcome === 'unavailable' ? hit : count(hit, limits)
    },
    checkNow: local && ((caller, limits) => count(local.hitNow(request(caller, limits)), limits)),
    async peek(caller, limits) {
      const { now, minuteCount, dayCount, bannedUntil } = await store.peek(caller.counterIdentity, caller.banIdentity)
      return count({ outcome: bannedUntil > now ? 'banned' : 'served', now, minuteCount, dayCount, bannedUntil }, limits)
    },
    unban: (caller) => store.unban(caller.counterIdentity, caller.banIdentity),
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
