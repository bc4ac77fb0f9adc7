// The rate-limit windows of a caller's account as they stand, shaped as GitHub's
// `GET /rate_limit`: read without counting the request that asks.
import type { Caller, RateLimiter, WindowState } from '../rate-limit/limiter.js'
import type { Usage } from '../schemas/key.js'
import type { Limits } from '../vocabulary/plans.js'

export async function windowsOf(limiter: RateLimiter, caller: Caller, limits: Limits): Promise<Usage> {
  const windows = await limiter.peek(caller, limits)
  const window = (state: WindowState) => ({
    limit: state.limit,
    remaining: windows.bannedUntil === undefined ? state.remaining : 0,
    reset: Math.ceil(state.resetsAt / 1000),
    used: state.limit - state.remaining,
  })
  return {
    minute: window(windows.minute),
    day: window(windows.day),
    bannedUntil: windows.bannedUntil === undefined ? null : new Date(windows.bannedUntil).toISOString(),
  }
}
