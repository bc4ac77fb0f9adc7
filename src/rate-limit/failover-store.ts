// Redis first; while it cannot be reached, either keep serving on this instance's
// own counters (fail open, the default) or refuse with 503 (fail closed). Each
// request tries Redis again, so service returns to Redis on its own; a down Redis
// costs no wait, because its client refuses at once while disconnected.
import { ApiError } from '../errors.js'
import type { CounterStore, HitRequest, HitResult } from './counter-store.js'

export type RedisFailureMode = 'open' | 'closed'

export interface FailoverOptions {
  primary: CounterStore
  fallback: CounterStore
  mode: RedisFailureMode
  /** Called once per change: true when falling back, false when Redis answers again. */
  onTransition: (degraded: boolean, error?: unknown) => void
}

export function createFailoverCounterStore({ primary, fallback, mode, onTransition }: FailoverOptions) {
  let degraded = false
  return {
    get degraded() {
      return degraded
    },
    async hit(request: HitRequest): Promise<HitResult> {
      try {
        const result = await primary.hit(request)
        if (degraded) {
          degraded = false
          onTransition(false)
        }
        return result
      } catch (error) {
        if (!degraded) {
          degraded = true
          onTransition(true, error)
        }
        if (mode === 'closed') {
          throw new ApiError('service_unavailable', 'The rate limiter is unavailable; retry shortly.', {
            headers: { 'retry-after': '1' },
            dependency: 'redis',
          })
        }
        return fallback.hit(request)
      }
    },
    async close() {
      await Promise.all([primary.close?.(), fallback.close?.()])
    },
  } satisfies CounterStore & { degraded: boolean }
}
