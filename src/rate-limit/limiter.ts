// Decision D7 on top of a CounterStore: which window to report, the headers every
// /v1 response carries, and Retry-After for refusals. No HTTP here beyond names.
import type { Limits } from '../api-keys/plans.js'
import { windowEnds, type CounterStore, type HitResult } from './counter-store.js'

export interface RateLimitDecision {
  outcome: HitResult['outcome']
  /** Header values for the response, whatever its status. */
  headers: Record<string, string>
  /** Whole seconds to wait, when refused. */
  retryAfter?: number
  /** The window that refused: 'minute' or 'day' (limited), or the ban's end (banned). */
  refusedBy?: 'minute' | 'day'
  bannedUntil?: number
}

export interface RateLimiterOptions {
  store: CounterStore & { degraded?: boolean }
  banAfter: number
  banSeconds: number
  /** Where the counters live, for /readyz and /metrics. */
  backend?: 'memory' | 'redis'
  /** Checks the shared store answers (Redis PING). */
  ping?: () => Promise<void>
  /** Resolves when the shared store is connected (or gave up trying for now). */
  ready?: () => Promise<void>
}

const seconds = (ms: number) => Math.ceil(ms / 1000)

// The RateLimit-Policy value depends on the limits alone: built once per limits
// object (the plans' constants, or a key's record while the authenticator caches it),
// not on every request.
const policies = new WeakMap<Limits, string>()
function policyOf(limits: Limits): string {
  let policy = policies.get(limits)
  if (policy === undefined) {
    // draft-ietf-httpapi-ratelimit-headers: the policies.
    policy = `"minute";q=${limits.perMinute};w=60, "day";q=${limits.perDay};w=86400`
    policies.set(limits, policy)
  }
  return policy
}

export function createRateLimiter({ store, banAfter, banSeconds, backend = 'memory', ping, ready = async () => {} }: RateLimiterOptions) {
  return {
    backend,
    /** True while the shared store is unreachable and this instance counts alone. */
    get degraded() {
      return store.degraded ?? false
    },
    ping,
    ready,
    /** Synchronous when the store is (counters in memory): no promise on the hot path. */
    check(identity: string, limits: Limits): RateLimitDecision | Promise<RateLimitDecision> {
      const hit = store.hit({ identity, limits, banAfter, banMs: banSeconds * 1000 })
      return hit instanceof Promise ? hit.then((counted) => decide(counted, limits)) : decide(hit, limits)
    },
    close: () => store.close?.() ?? Promise.resolve(),
  }
}

export type RateLimiter = ReturnType<typeof createRateLimiter>

/** Turns the counts a store returned into the response's rate-limit headers. */
export function decide(hit: HitResult, limits: Limits): RateLimitDecision {
  const ends = windowEnds(hit.now)
  const minute = { name: 'minute' as const, limit: limits.perMinute, remaining: Math.max(0, limits.perMinute - hit.minuteCount), end: ends.minute }
  const day = { name: 'day' as const, limit: limits.perDay, remaining: Math.max(0, limits.perDay - hit.dayCount), end: ends.day }

  // Served: the window with the fewest requests left after this one (ties: the
  // minute). Refused: the window that refused; when both are full, the one that
  // frees up last, since only then can the request succeed.
  let shown = day.remaining < minute.remaining ? day : minute
  if (hit.outcome === 'limited') shown = day.remaining === 0 ? day : minute

  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(shown.limit),
    'x-ratelimit-remaining': String(shown.remaining),
    'x-ratelimit-reset': String(seconds(shown.end)),
    'ratelimit-policy': policyOf(limits),
    // draft-ietf-httpapi-ratelimit-headers: the state of each policy.
    ratelimit: `"minute";r=${minute.remaining};t=${seconds(minute.end - hit.now)}, "day";r=${day.remaining};t=${seconds(day.end - hit.now)}`,
  }
  if (hit.outcome === 'served') return { outcome: 'served', headers }

  if (hit.outcome === 'banned') {
    const retryAfter = Math.max(1, seconds(hit.bannedUntil - hit.now))
    headers['x-ratelimit-remaining'] = '0'
    headers['x-ratelimit-reset'] = String(seconds(hit.bannedUntil))
    headers['retry-after'] = String(retryAfter)
    return { outcome: 'banned', headers, retryAfter, bannedUntil: hit.bannedUntil }
  }
  const retryAfter = Math.max(1, seconds(shown.end - hit.now))
  headers['x-ratelimit-remaining'] = '0'
  headers['retry-after'] = String(retryAfter)
  return { outcome: 'limited', headers, retryAfter, refusedBy: shown.name }
}
