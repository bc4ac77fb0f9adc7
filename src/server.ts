// Process entry: config → store → limiter → app → listen. SIGTERM and SIGINT drain
// in-flight requests, then close the limiter and the store.
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'
import { pino } from 'pino'
import { buildApp } from './app.js'
import { createMetrics } from './plugins/metrics.js'
import { systemClock } from './clock.js'
import { clusterMetricsOf, isPrimaryOf, runPrimary, startWarnings } from './cluster.js'
import { loadConfig, loadDotEnv, redactUrl, type Config } from './config.js'
import { loggerOptions } from './logging.js'
import { closeMetrics, serveMetrics } from './metrics-listener.js'
import { migratingMessage } from './db/database.js'
import { openStoreFromConfig } from './db/from-config.js'
import { unsupportedNodeMessage } from './node-support.js'
import { createRateLimiterFromConfig } from './rate-limit/from-config.js'
import { createUsageRecorder } from './usage/recorder.js'
import { startDispatcher } from './webhooks/dispatcher.js'
import { requireKeyInProduction, secretBoxFromConfig } from './secrets/secret-box.js'
import { parseCidrs, useDnsServers } from './webhooks/outbound.js'
import { requestPressure } from './webhooks/request-pressure.js'
import { writePacing, type WritePacing } from './webhooks/write-pacing.js'
import { createRequestTracker } from './plugins/in-flight.js'

/** How the store and the limiter report what happens in the background: through a logger of the same options until the app's exists. */
type Report = (level: 'warn' | 'error', message: string, error?: unknown, fields?: Record<string, unknown>) => void

export async function startServer(config: Config) {
  useDnsServers(config.webhookDnsServers)
  // Log lines before the app exists (Redis that never connects is told while starting) are log lines like the others.
  const early = pino(loggerOptions(config))
  let report: Report = (level, message, error, fields) => early[level]({ ...fields, err: error }, message)
  // Before anything starts, the database included: production without PETSTORE_SECRET_KEY stops here.
  requireKeyInProduction(config)
  const store = await openStoreFromConfig(config, {
    migrations: { onPending: (names) => early.info({ migrations: names }, migratingMessage(names)) },
    onConnectionError: (error) => report('warn', 'a database connection was lost; the pool opens a new one', error),
    onBackgroundError: (error, what) => report('warn', what, error),
    onCircuitChange: (open, error) =>
      open
        ? report('error', 'the database did not answer in time: refusing requests that need it (503) at once until it answers again', error)
        : report('warn', 'the database answers again'),
  })
  const redis = config.redisUrl ? redactUrl(config.redisUrl) : undefined
  const limiter = createRateLimiterFromConfig(config, systemClock, {
    onRedisTransition: (degraded, error) =>
      degraded
        ? report('error', `Redis at ${redis} unreachable (${error instanceof Error ? error.message : 'connection lost'}): rate limiting on this instance alone until it answers again`, undefined, { redis })
        : report('warn', `Redis at ${redis} answers again: rate limits are shared again`, undefined, { redis }),
  })
  try {
    await limiter.ready()
  } catch (error) {
    await Promise.all([limiter.close(), store.close()])
    throw error
  }
  const usage = createUsageRecorder({ usage: store.usage, writes: store.background.usage, clock: systemClock, onError: (error) => report('warn', 'could not write usage counts; kept for the next try', error) })
  // PETSTORE_DISPATCH=off: a `petstore dispatch` process delivers, off this process's core.
  // On: it gives way to this process's requests when they keep it busy.
  const requests = createRequestTracker()
  // Its lag floor: the dispatcher's own measure of how far behind it is.
  const pressure = config.dispatch === 'on' ? requestPressure({ requests, lagMs: (): number | undefined => dispatcher?.lagMs }) : undefined
  const metrics = createMetrics()
  const secrets = secretBoxFromConfig(config)
  for (const warning of startWarnings(config)) report('warn', warning)
  const dispatcher =
    pressure
      ? startDispatcher({
          deliveries: store.deliveries,
          secrets,
          clock: systemClock,
          allowed: parseCidrs(config.webhookAllowCidrs),
          leaseMs: config.webhookLease * 1000,
          perEndpoint: config.webhookPerEndpoint,
          // Never while writes are paced: they wait for this dispatcher to catch up.
          busy: (): boolean => pacing?.rate === undefined && pressure.busy(),
          onError: (error, what) => report('warn', what, error),
          onAttempt: metrics.observeWebhookAttempt,
        })
      : undefined
  // Writes that make events slow down while this dispatcher falls behind, so that the oldest webhook waiting stays within PETSTORE_WEBHOOK_MAX_LAG.
  const pacing: WritePacing | undefined =
    dispatcher && config.webhookMaxLag > 0
      ? writePacing({
          lagMs: () => dispatcher.lagMs,
          maxLagMs: config.webhookMaxLag * 1000,
          // Refused well before the request's deadline would answer it 503 outcome_unknown, which says less.
          maxWaitMs: Math.min(2_000, (config.requestDeadline * 1000) / 2),
          onChange: (rate, waitMs) =>
            rate === undefined
              ? report('warn', 'webhook deliveries caught up: writes that make events are no longer paced', undefined, { predictedWaitMs: Math.round(waitMs) })
              : report('warn', `webhook deliveries fall behind: pacing the writes that make events (PETSTORE_WEBHOOK_MAX_LAG ${config.webhookMaxLag} s)`, undefined, {
                  predictedWaitMs: Math.round(waitMs),
                  permitsPerSecond: Math.round(rate),
                }),
        })
      : undefined
  const scrapeMetrics = clusterMetricsOf(metrics.registry)
  const app = await buildApp({ config, store, limiter, usage, metrics, secrets, requests, ...(scrapeMetrics ? { scrapeMetrics } : {}), wakeDispatcher: dispatcher?.wake ?? (() => {}), ...(dispatcher && { endpointChanged: dispatcher.endpointChanged }), ...(pacing ? { writePacing: pacing } : {}) })
  report = (level, message, error, fields) => app.log[level]({ ...fields, err: error }, message)
  /** PETSTORE_METRICS_PORT's listener. */
  let metricsServer: Server | undefined
  // Closed in reverse order of opening, once the app has drained.
  app.addHook('onClose', async () => {
    if (metricsServer) await closeMetrics(metricsServer)
    // Deliveries under way finish (or their leases run out for another instance); nothing is lost.
    pacing?.stop()
    await dispatcher?.close()
    pressure?.stop()
    await usage.close()
    await limiter.close()
    await store.close()
  })
  try {
    await app.listen({ host: config.host, port: config.port })
    if (config.metricsPort !== undefined) {
      metricsServer = await serveMetrics({ scrape: scrapeMetrics ?? (() => metrics.registry.metrics()), contentType: metrics.registry.contentType }, config.host, config.metricsPort)
    }
  } catch (error) {
    const apiListened = app.server.listening
    await app.close()
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      const [name, port] = apiListened ? ['PETSTORE_METRICS_PORT', config.metricsPort] : ['PORT', config.port]
      throw new Error(`port ${port} on ${config.host} is already in use (EADDRINUSE): set ${name} to another port, or ${name}=0 for any free one`, { cause: error })
    }
    throw error
  }
  const { port } = app.server.address() as AddressInfo
  const hostInUrl = config.host.includes(':') ? `[${config.host}]` : config.host
  const url = `http://${hostInUrl}:${port}`
  const metricsUrl = metricsServer ? `http://${hostInUrl}:${(metricsServer.address() as AddressInfo).port}/metrics` : `${url}/metrics`
  // Listened to for good, not once: under PETSTORE_WORKERS a signal sent to the whole
  // process group (systemd's default, Ctrl-C) reaches a worker twice, from the kernel
  // and from the primary, and a second one with no listener would kill it mid-drain.
  let stopping = false
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return app.log.info({ signal }, 'already shutting down')
    stopping = true
    app.log.info({ signal }, 'shutting down: draining in-flight requests')
    setTimeout(() => {
      app.log.error(`in-flight requests still running after ${config.shutdownTimeout} s; exiting anyway`)
      process.exit(1)
    }, config.shutdownTimeout * 1000).unref()
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, stop)

  // After the signals are listened to: a supervisor may send SIGTERM as soon as it reads this line.
  const storeName = redactUrl(config.databaseUrl)
  // One line that says what runs where: the address, the docs, the store (never its password), the environment.
  app.log.info(
    { url, docs: `${url}/docs`, metrics: metricsUrl, store: storeName, environment: config.environment },
    `petstore (${config.environment}) serving ${url}/v1, docs at ${url}/docs, store ${storeName}`,
  )
  return app
}

/** Runs the service as configured: one process, or a primary with PETSTORE_WORKERS workers. */
export async function serve(config: Config): Promise<void> {
  if (isPrimaryOf(config)) await runPrimary(config)
  else await startServer(config)
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const unsupported = unsupportedNodeMessage()
  if (unsupported) {
    console.error(`petstore: ${unsupported}`)
    process.exit(1)
  }
  Promise.resolve()
    .then(() => {
      loadDotEnv()
      return serve(loadConfig())
    })
    .catch((error: unknown) => {
      console.error(`petstore: ${error instanceof Error ? error.message : String(error)}`)
      process.exit(1)
    })
}
