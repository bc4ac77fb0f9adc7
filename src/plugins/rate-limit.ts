// The rate-limit step of the /v1 scope. It runs after `identify` (so it knows the
// key) and before `requireApiKey` (so a 401 is counted and carries the headers
// too): callers without a valid key are limited per client address with the free
// plan's numbers, a guard against key guessing.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { PLAN_LIMITS } from '../api-keys/plans.js'
import { ApiError } from '../errors.js'
import type { RateLimitDecision, RateLimiter } from '../rate-limit/limiter.js'

export function createRateLimitHook(limiter: RateLimiter) {
  /** Counts the request, sets the headers and throws the 429. Synchronous when the limiter is (counters in memory). */
  return function rateLimit(request: FastifyRequest, reply: FastifyReply): void | Promise<void> {
    const key = request.apiKey
    const decision = key ? limiter.check(`key:${key.id}`, key.limits) : limiter.check(`ip:${request.ip}`, PLAN_LIMITS.free)
    if (decision instanceof Promise) return decision.then((decided) => answer(request, reply, decided))
    answer(request, reply, decision)
  }
}

function answer(request: FastifyRequest, reply: FastifyReply, decision: RateLimitDecision) {
  reply.headers(decision.headers)
  const key = request.apiKey
  if (decision.outcome !== 'served') throw refusal(decision, key ? `the ${key.plan} plan` : 'callers without a valid API key')
}

function refusal(decision: RateLimitDecision, who: string): ApiError {
  const wait = `Retry after ${decision.retryAfter} seconds`
  if (decision.outcome === 'banned') {
    const until = new Date(decision.bannedUntil ?? 0).toISOString()
    return new ApiError('key_banned', `Temporarily banned until ${until} for repeated requests while rate limited. ${wait}, then back off exponentially on 429.`)
  }
  const limit = decision.headers['x-ratelimit-limit']
  const message =
    decision.refusedBy === 'day'
      ? `Daily quota of ${limit} requests for ${who} is used up; it resets at 00:00 UTC. ${wait}.`
      : `Rate limit of ${limit} requests per minute for ${who} exceeded. ${wait}.`
  return new ApiError('rate_limited', message)
}
