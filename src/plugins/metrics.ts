// GET /metrics: Prometheus text from prom-client, with a registry per app so that
// several apps in one process (tests) never mix their numbers.
import fp from 'fastify-plugin'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { Store } from '../db/store.js'
import type { RateLimiter } from '../rate-limit/limiter.js'

export function createMetrics() {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'petstore_' })
  return {
    registry,
    requests: new Counter({
      name: 'petstore_http_requests_total',
      help: 'HTTP requests answered, by route, method and status.',
      labelNames: ['route', 'method', 'status'] as const,
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'petstore_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by route, method and status.',
      labelNames: ['route', 'method', 'status'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'petstore_rate_limit_refusals_total',
      help: 'Requests refused by the rate limiter, by code (rate_limited or key_banned).',
      labelNames: ['code'] as const,
      registers: [registry],
    }),
    apiRequests: apiRequestsCounter(registry),
    storeErrors: new Counter({
      name: 'petstore_store_errors_total',
      help: 'Requests answered 503 because the database could not be reached.',
      registers: [registry],
    }),
  }
}

export type Metrics = ReturnType<typeof createMetrics>

/**
 * Requests made with a valid key, by plan and outcome, never by key (a label per key
 * would grow without bound). Counted in a plain map on the request path, and handed
 * to prom-client when scraped: labelling each request would hash its labels.
 */
function apiRequestsCounter(registry: Registry) {
  const counts = new Map<string, number>()
  new Counter({
    name: 'petstore_api_requests_total',
    help: 'Requests made with a valid API key, by plan and outcome (ok, rate_limited, banned, forbidden, error).',
    labelNames: ['plan', 'outcome'] as const,
    registers: [registry],
    collect() {
      for (const [label, n] of counts) {
        const [plan = '', outcome = ''] = label.split(' ')
        this.inc({ plan, outcome }, n)
      }
      counts.clear()
    },
  })
  return {
    inc(plan: string, outcome: string) {
      const label = `${plan} ${outcome}`
      counts.set(label, (counts.get(label) ?? 0) + 1)
    },
  }
}

export default fp(
  async (app, { metrics, limiter, store }: { metrics: Metrics; limiter: RateLimiter; store: Pick<Store, 'calls' | 'circuitOpen'> }) => {
    let storeCallsCounted = 0
    new Counter({
      name: 'petstore_store_calls_total',
      help: 'Calls made to the database store (each one or more statements): a refused request should add none.',
      registers: [metrics.registry],
      collect() {
        const calls = store.calls()
        this.inc(calls - storeCallsCounted)
        storeCallsCounted = calls
      },
    })
    let fallbacksCounted = 0
    new Counter({
      name: 'petstore_redis_fallbacks_total',
      help: 'Times the rate limiter lost Redis and fell back to per-instance counters.',
      registers: [metrics.registry],
      // The limiter counts its fallbacks; read when scraped.
      collect() {
        const fallbacks = limiter.shared?.fallbacks ?? 0
        this.inc(fallbacks - fallbacksCounted)
        fallbacksCounted = fallbacks
      },
    })
    new Gauge({
      name: 'petstore_rate_limiter_degraded',
      help: '1 while Redis cannot be reached and this instance counts rate limits alone, else 0.',
      registers: [metrics.registry],
      collect() {
        this.set(limiter.degraded ? 1 : 0)
      },
    })

    new Gauge({
      name: 'petstore_store_circuit_open',
      help: '1 while the database went silent and requests that need it are refused at once (503) until a probe gets an answer, else 0.',
      registers: [metrics.registry],
      collect() {
        this.set(store.circuitOpen ? 1 : 0)
      },
    })

    // Callback style (with `done`): it never waits, so it skips an async hook's promise.
    app.addHook('onResponse', (request, reply, done) => {
      // The route pattern, not the URL, so that ids and query strings do not explode the label set.
      const labels = { route: request.routeOptions.url ?? 'unknown', method: request.method, status: String(reply.statusCode) }
      metrics.requests.inc(labels)
      metrics.duration.observe(labels, reply.elapsedTime / 1000)
      const error = request.apiError
      if (error?.code === 'rate_limited' || error?.code === 'key_banned') metrics.rateLimited.inc({ code: error.code })
      if (error?.dependency === 'store') metrics.storeErrors.inc()
      done()
    })

    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      reply.type(metrics.registry.contentType)
      return metrics.registry.metrics()
    })
  },
  { name: 'metrics' },
)
