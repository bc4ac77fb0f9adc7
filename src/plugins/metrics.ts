// GET /metrics: Prometheus text from prom-client, with a registry per app so that
// several apps in one process (tests) never mix their numbers.
import fp from 'fastify-plugin'
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { Store } from '../db/store.js'
import type { Clock } from '../clock.js'
import type { Backlog, DeliveryQueue } from '../db/delivery-queue.js'
import type { RateLimiter } from '../rate-limit/limiter.js'
import type { AttemptOutcome } from '../webhooks/dispatcher.js'
import type { WritePacing } from '../webhooks/write-pacing.js'

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
    ...webhookAttemptMetrics(registry),
  }
}

/**
 * `petstore dispatch`'s metrics, which it serves on PETSTORE_DISPATCH_METRICS_PORT: the
 * process's own, its attempts, and the queue's backlog (the same gauges as an API
 * instance's, read from the store when scraped).
 */
export function createDispatchMetrics(deliveries: DeliveryQueue, clock: Clock, onError: (error: unknown) => void) {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'petstore_' })
  webhookBacklogMetrics(registry, deliveries, clock, onError)
  return { registry, ...webhookAttemptMetrics(registry) }
}

/** This instance's dispatcher's attempts (server.ts hands it `observeWebhookAttempt`). */
function webhookAttemptMetrics(registry: Registry) {
  const attempts = new Counter({
    name: 'petstore_webhook_attempts_total',
    help: "Webhook attempts this instance's dispatcher recorded, by outcome: delivered (2xx), retrying (failed, tried again later), failed (for good: 410, or the schedule is over), not_sent (the endpoint or its account is disabled, or no longer takes the type).",
    labelNames: ['outcome'] as const,
    registers: [registry],
  })
  const latency = new Histogram({
    name: 'petstore_webhook_delivery_latency_seconds',
    help: 'From an event written to its delivery answered 2xx (a redelivery or test event: from its queueing), retries included.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1_800, 7_200, 36_000],
    registers: [registry],
  })
  return {
    observeWebhookAttempt(outcome: AttemptOutcome, latencyMs: number | undefined) {
      attempts.inc({ outcome })
      if (latencyMs !== undefined) latency.observe(Math.max(0, latencyMs) / 1000)
    },
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

/** The queue's backlog, read from the store when scraped: the same numbers on every instance, as the queue is shared. */
function webhookBacklogMetrics(registry: Registry, deliveries: DeliveryQueue, clock: Clock, onError: (error: unknown) => void) {
  // One query a scrape for both gauges: prom-client collects every metric at once, so both ask within the same tick.
  let reading: Promise<(Backlog & { now: number }) | undefined> | undefined
  const read = () => {
    if (!reading) {
      const now = clock.now()
      reading = deliveries
        .backlog(now)
        .then(
          (backlog) => ({ ...backlog, now }),
          (error: unknown) => {
            onError(error)
            return undefined
          },
        )
        .finally(() => {
          reading = undefined
        })
    }
    return reading
  }
  new Gauge({
    name: 'petstore_webhook_deliveries_pending',
    help: 'Pending webhook deliveries, by state: due (to send now: the backlog) or retrying (waiting for a later attempt).',
    labelNames: ['state'] as const,
    // Every worker reads the same queue: one of them, not their sum.
    aggregator: 'first',
    registers: [registry],
    async collect() {
      const backlog = await read()
      if (!backlog) return
      this.set({ state: 'due' }, backlog.due)
      this.set({ state: 'retrying' }, backlog.retrying)
    },
  })
  new Gauge({
    name: 'petstore_webhook_oldest_pending_seconds',
    aggregator: 'max',
    help: 'Age of the oldest webhook work not yet attempted (an event to fan out, a delivery never tried): how far behind the dispatchers are. 0 when none.',
    registers: [registry],
    async collect() {
      const backlog = await read()
      if (backlog) this.set(backlog.oldestSince === null ? 0 : Math.max(0, (backlog.now - backlog.oldestSince) / 1000))
    },
  })
}

/** A counter whose value is a running total kept elsewhere, read when scraped. */
function totalCounter(registry: Registry, name: string, help: string, total: () => number) {
  let counted = 0
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = total()
      this.inc(now - counted)
      counted = now
    },
  })
}

export interface MetricsPluginOptions {
  metrics: Metrics
  limiter: RateLimiter
  /** The store's count of calls, whether its circuit is open, and the webhook backlog. */
  store: Pick<Store, 'calls' | 'backgroundCalls' | 'circuitOpen' | 'deliveries'>
  clock: Clock
  /** With PETSTORE_WORKERS: every worker's metrics, summed by the primary (cluster.ts); by default, this process's. */
  scrape?: () => Promise<string>
  /** The pace of the writes that make events, when this process paces them. */
  writePacing?: Pick<WritePacing, 'rate'> | undefined
  /** False: no GET /metrics on this app (PETSTORE_METRICS_PORT: server.ts serves it on a port of its own). */
  route?: boolean
}

export default fp(
  async (app, { metrics, limiter, store, clock, scrape = () => metrics.registry.metrics(), writePacing, route = true }: MetricsPluginOptions) => {
    webhookBacklogMetrics(metrics.registry, store.deliveries, clock, (error) => app.log.warn({ err: error }, 'could not read the webhook backlog for /metrics'))
    totalCounter(metrics.registry, 'petstore_store_calls_total', 'Calls made to the database store (each one or more statements), petstore_store_background_calls_total included: a refused request should add none.', () => store.calls())
    totalCounter(
      metrics.registry,
      'petstore_store_background_calls_total',
      'Of petstore_store_calls_total, the calls no request waits for, paid by time and not by request: a cached key refreshed (every 2 s while in use) or its last use recorded (once a minute), the usage history written (every 5 s), the purges.',
      () => store.backgroundCalls(),
    )
    // The limiter counts its fallbacks; read when scraped.
    totalCounter(metrics.registry, 'petstore_redis_fallbacks_total', 'Times the rate limiter lost Redis and fell back to per-instance counters.', () => limiter.shared?.fallbacks ?? 0)
    new Gauge({
      name: 'petstore_rate_limiter_degraded',
      aggregator: 'max',
      help: '1 while Redis cannot be reached and this instance counts rate limits alone, else 0.',
      registers: [metrics.registry],
      collect() {
        this.set(limiter.degraded ? 1 : 0)
      },
    })

    new Gauge({
      name: 'petstore_store_circuit_open',
      // Each worker has its own circuit: 1 while any is open, never the count of them.
      aggregator: 'max',
      help: '1 while the database went silent and requests that need it are refused at once (503) until a probe gets an answer, else 0.',
      registers: [metrics.registry],
      collect() {
        this.set(store.circuitOpen ? 1 : 0)
      },
    })

    new Gauge({
      name: 'petstore_write_pacing_permits_per_second',
      // Each worker paces its own writes: the sum is the instance's rate.
      aggregator: 'sum',
      help: 'While webhook deliveries fall behind (PETSTORE_WEBHOOK_MAX_LAG), the writes that make events this instance lets through a second; 0 while they are not paced.',
      registers: [metrics.registry],
      collect() {
        this.set(writePacing?.rate ?? 0)
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

    if (route) {
      app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
        reply.type(metrics.registry.contentType)
        return scrape()
      })
    }
  },
  { name: 'metrics' },
)
