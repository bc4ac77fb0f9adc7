// Shared counters first; while they cannot be reached, either count on this
// instance's own (fail open, the default) or answer that the limiter is unavailable
// (fail closed: the caller refuses the request).
//
// A circuit breaker: once a call fails (refused, reset, or timed out on a silent
// Redis), the store is degraded and no request asks Redis again, so a silent Redis
// costs one command timeout, not one per request. The way back does not wait for a
// request either: the Redis client's 'ready' event, or a probe every half second
// while degraded, returns to the shared counters. An instance that a load balancer
// took out of rotation gets no requests, and must still recover.
import type { CounterStore, HitRequest, HitResult, PeekResult, SharedCounterStore } from './counter-store.js'

export type RedisFailureMode = 'open' | 'closed'

/** The shared counters could not be reached and the mode is 'closed': nothing was counted. */
export interface Unavailable {
  outcome: 'unavailable'
  reason: string
}

export interface FailoverOptions {
  primary: SharedCounterStore
  fallback: CounterStore
  mode: RedisFailureMode
  /** Called once per change: true when falling back, false when the shared counters answer again. */
  onTransition: (degraded: boolean, error?: unknown) => void
  /** How often a degraded store asks the shared one whether it answers again (500 ms). */
  probeEveryMs?: number
}

export interface FailoverCounterStore {
  hit(request: HitRequest): Promise<HitResult | Unavailable>
  /** From the shared counters, or this instance's while they cannot be reached. */
  peek(identity: string, banIdentity: string): Promise<PeekResult>
  /** Lifts the ban in the shared counters and in this instance's (which hold it while Redis is down). */
  unban(identity: string, banIdentity: string): Promise<boolean>
  /** True while the shared counters cannot be reached. */
  readonly degraded: boolean
  /** How many times the shared counters were lost and this instance fell back (for /metrics). */
  readonly fallbacks: number
  readonly mode: RedisFailureMode
  /** Asks the shared counters now (PING); resolves or rejects with why, and updates `degraded` either way. */
  probe(): Promise<void>
  ready(): Promise<void>
  close(): Promise<void>
}

const reasonOf = (error: unknown) => (error instanceof Error && error.message ? error.message : String(error ?? 'connection lost'))

export function createFailoverCounterStore({ primary, fallback, mode, onTransition, probeEveryMs = 500 }: FailoverOptions): FailoverCounterStore {
  let degraded = false
  let fallbacks = 0
  let closed = false
  let probing: NodeJS.Timeout | undefined

  function setDegraded(next: boolean, error?: unknown) {
    if (next === degraded || closed) return
    degraded = next
    if (next) fallbacks++
    if (next) probing = setInterval(() => probe().catch(() => {}), probeEveryMs).unref()
    else clearInterval(probing)
    onTransition(next, error)
  }

  async function probe() {
    try {
      await primary.ping()
    } catch (error) {
      setDegraded(true, error)
      throw error
    }
    setDegraded(false)
  }

  // Whether it ever connected tells an operator a wrong REDIS_URL from an outage.
  let everConnected = false
  primary.onConnectionChange((up) => {
    if (up) everConnected = true
    setDegraded(!up, up ? undefined : new Error(everConnected ? 'connection to Redis lost' : 'never connected to Redis'))
  })

  /** Degraded: straight to the fallback (open) or the refusal (closed), without asking Redis. */
  function withoutRedis(request: HitRequest, reason: string): Promise<HitResult | Unavailable> | Unavailable {
    return mode === 'closed' ? { outcome: 'unavailable', reason } : fallback.hit(request)
  }

  return {
    async hit(request) {
      if (degraded) return withoutRedis(request, 'the shared rate-limit counters cannot be reached')
      try {
        const result = await primary.hit(request)
        setDegraded(false)
        return result
      } catch (error) {
        setDegraded(true, error)
        return withoutRedis(request, reasonOf(error))
      }
    },
    async peek(identity, banIdentity) {
      if (degraded) return fallback.peek(identity, banIdentity)
      try {
        return await primary.peek(identity, banIdentity)
      } catch (error) {
        setDegraded(true, error)
        return fallback.peek(identity, banIdentity)
      }
    },
    async unban(identity, banIdentity) {
      const local = await fallback.unban(identity, banIdentity)
      try {
        return (await primary.unban(identity, banIdentity)) || local
      } catch (error) {
        setDegraded(true, error)
        return local
      }
    },
    get degraded() {
      return degraded
    },
    get fallbacks() {
      return fallbacks
    },
    mode,
    probe,
    ready: () => primary.ready(),
    async close() {
      closed = true
      clearInterval(probing)
      await Promise.all([primary.close(), fallback.close()])
    },
  }
}
