// Chooses where counters live: this process's memory, or Redis (REDIS_URL) with
// per-instance memory counters as the fallback while Redis cannot be reached.
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { createFailoverCounterStore } from './failover-store.js'
import { createRateLimiter, type RateLimiter } from './limiter.js'
import { createMemoryCounterStore } from './memory-store.js'
import { createRedisCounterStore } from './redis-store.js'

export interface LimiterEvents {
  /** Once per change of state, so the log is not flooded while Redis is down. */
  onRedisTransition(degraded: boolean, error?: unknown): void
}

export function createRateLimiterFromConfig(config: Config, clock: Clock, events: LimiterEvents): RateLimiter {
  const limits = { banAfter: config.banAfter, banSeconds: config.banSeconds }
  if (!config.redisUrl) return createRateLimiter({ store: createMemoryCounterStore(clock), ...limits })
  const store = createFailoverCounterStore({
    primary: createRedisCounterStore({ url: config.redisUrl, prefix: config.redisPrefix }),
    fallback: createMemoryCounterStore(clock),
    mode: config.redisFailure,
    onTransition: events.onRedisTransition,
  })
  return createRateLimiter({ store, ...limits })
}
