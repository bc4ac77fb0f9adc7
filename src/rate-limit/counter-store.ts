// The contract between the limiter and where counters live. One call does the
// whole check atomically, in one round trip: memory-store.ts in one process,
// redis-store.ts as one Lua script for many instances. The store, not the caller,
// reads the clock, so that in Redis every instance agrees on the windows.

import type { Limits } from '../vocabulary/plans.js'

export const MINUTE_MS = 60_000
export const DAY_MS = 86_400_000

export interface HitRequest {
  /** Who is counted: `account:<id>@<created at>` or `ip:<address>` (v1-guard.ts). */
  identity: string
  /**
   * Who is banned for refusals: the key (`key:<id>@<created at>`) while its account is
   * counted, so that one key's flood bans that key alone; the identity itself for an address.
   */
  banIdentity: string
  limits: Limits
  /** Refused requests allowed in one minute window before a ban (a ban resets the count). */
  banAfter: number
  banMs: number
}

export interface HitResult {
  /**
   * served: counted in both windows. limited: refused, counted in neither.
   * banned: refused because the identity is banned (or this refusal started the ban).
   */
  outcome: 'served' | 'limited' | 'banned'
  /** The time the store used, Unix ms. */
  now: number
  /** Requests counted in the current UTC minute and UTC day, after this one. */
  minuteCount: number
  dayCount: number
  /** Unix ms when the ban ends, when banned. */
  bannedUntil: number
}

/** An identity's counts as they stand, without counting anything. */
export interface PeekResult {
  now: number
  minuteCount: number
  dayCount: number
  /** Unix ms when the ban ends; 0 when not banned. */
  bannedUntil: number
}

export interface CounterStore {
  hit(request: HitRequest): Promise<HitResult>
  peek(identity: string, banIdentity: string): Promise<PeekResult>
  /** Lifts the ban of `banIdentity` (counted as `identity`); true when there was one. */
  unban(identity: string, banIdentity: string): Promise<boolean>
  close(): Promise<void>
}

/** Counters in this process's memory: the same count is also available at once. */
export interface LocalCounterStore extends CounterStore {
  hitNow(request: HitRequest): HitResult
  peekNow(identity: string, banIdentity: string): PeekResult
}

/** Counters shared by every instance, over the network: they can be unreachable. */
export interface SharedCounterStore extends CounterStore {
  /** Resolves when the store answers now (Redis PING); rejects saying why not. */
  ping(): Promise<void>
  /** Calls `listener(true)` each time the connection is (re)established, `listener(false)` each time it is lost. */
  onConnectionChange(listener: (up: boolean) => void): void
  /** Resolves once connected, or once the first attempt gave up: a server starting while Redis is down still starts. */
  ready(): Promise<void>
}

/** Fixed UTC windows: the minute and the day that `now` falls in end at these times. */
export function windowEnds(now: number): { minute: number; day: number } {
  return { minute: (Math.floor(now / MINUTE_MS) + 1) * MINUTE_MS, day: (Math.floor(now / DAY_MS) + 1) * DAY_MS }
}
