// GET /healthz: the process is up (liveness). GET /readyz: can this instance serve
// /v1 now? (decision D1). Each check asks its dependency when probed, never a state
// that only /v1 traffic updates: an instance out of rotation gets no /v1 traffic.
//
// The store must answer. Redis must answer only when PETSTORE_REDIS_FAILURE=closed:
// in the default 'open' mode the instance serves on its own counters, so it stays
// ready and says "degraded"; failing readiness there would take every instance out
// of the load balancer at once, since they all share the one Redis.
import fp from 'fastify-plugin'
import type { Store } from '../db/store.js'
import { ApiError } from '../errors.js'
import type { RateLimiter } from '../rate-limit/limiter.js'
import { sendError } from './error-handler.js'

const CHECK_TIMEOUT_MS = 2_000
/** A burst of probes (several load balancers) costs one query per dependency per second. */
const CHECK_CACHE_MS = 1_000

type Outcome = { ok: true } | { ok: false; reason: string; error?: unknown }

/** What a failed check says: in our words, never the driver's (its error goes to the log). */
function reasonOf(error: unknown): string {
  if (error instanceof Error && error.message.startsWith('no answer within')) return error.message
  return 'cannot be reached'
}

async function withTimeout(check: () => Promise<void>): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS)
      }),
    ])
    return { ok: true }
  } catch (error) {
    return { ok: false, reason: reasonOf(error), error }
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The check's outcome, shared by every caller while it runs and, when it passed, for
 * CHECK_CACHE_MS after. A failure is not kept: the next probe asks again, so
 * readiness returns as soon as the dependency does.
 */
function cached(check: () => Promise<void>): () => Promise<Outcome> {
  let last: { outcome: Promise<Outcome>; until: number } | undefined
  return () => {
    if (!last || Date.now() >= last.until) {
      const entry = { outcome: withTimeout(check), until: Number.POSITIVE_INFINITY }
      void entry.outcome.then((outcome) => (entry.until = outcome.ok ? Date.now() + CHECK_CACHE_MS : 0))
      last = entry
    }
    return last.outcome
  }
}

export default fp(
  async (app, { store, limiter }: { store: Store; limiter: RateLimiter }) => {
    const storeCheck = cached(() => store.ping())
    const shared = limiter.shared
    const redisCheck = shared && cached(() => shared.probe())

    app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))

    app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
      const [storeOutcome, redisOutcome] = await Promise.all([storeCheck(), redisCheck?.()])
      for (const [what, outcome] of [['store', storeOutcome], ['redis', redisOutcome]] as const) {
        if (outcome && !outcome.ok) request.log.warn({ err: outcome.error }, `readiness: ${what} ${outcome.reason}`)
      }
      const checks: Record<string, 'ok' | 'degraded' | 'down'> = { store: storeOutcome.ok ? 'ok' : 'down' }
      const down = []
      const degraded = []
      if (!storeOutcome.ok) down.push({ field: 'store', message: storeOutcome.reason })
      if (redisOutcome && !redisOutcome.ok) {
        if (shared?.mode === 'closed') {
          checks.redis = 'down'
          down.push({ field: 'redis', message: `${redisOutcome.reason}; PETSTORE_REDIS_FAILURE=closed refuses /v1 until Redis answers` })
        } else {
          checks.redis = 'degraded'
          degraded.push({ field: 'redis', message: `${redisOutcome.reason}; rate limits are counted on this instance alone until Redis answers` })
        }
      } else if (redisOutcome) checks.redis = 'ok'

      if (down.length > 0) {
        return sendError(reply, new ApiError('service_unavailable', `Not ready: ${down.map((d) => `${d.field} (${d.message})`).join(', ')}.`, { details: down }))
      }
      return degraded.length > 0 ? { status: 'ready', checks, details: degraded } : { status: 'ready', checks }
    })
  },
  { name: 'health' },
)
