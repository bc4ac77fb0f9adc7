// `petstore dispatch`: webhook delivery as a process of its own, so that the API's
// processes (PETSTORE_DISPATCH=off) spend no CPU on it. Any number may run against
// one PostgreSQL store (they claim with SKIP LOCKED); SQLite takes one beside its
// server. SIGTERM and SIGINT let the attempts under way finish and give back what was
// claimed but not started.
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'
import { pino } from 'pino'
import { systemClock } from './clock.js'
import { loadConfig, loadDotEnv, redactUrl, type Config } from './config.js'
import { migratingMessage } from './db/database.js'
import { openStoreFromConfig } from './db/from-config.js'
import { loggerOptions } from './logging.js'
import { closeMetrics, serveMetrics } from './metrics-listener.js'
import { unsupportedNodeMessage } from './node-support.js'
import { createDispatchMetrics } from './plugins/metrics.js'
import { startDispatcher } from './webhooks/dispatcher.js'
import { localKeyWarning, secretBoxFromConfig } from './secrets/secret-box.js'
import { parseCidrs, useDnsServers } from './webhooks/outbound.js'

export async function runDispatch(config: Config): Promise<void> {
  useDnsServers(config.webhookDnsServers)
  const log = pino(loggerOptions(config))
  const secrets = secretBoxFromConfig(config)
  const keyWarning = localKeyWarning(config)
  if (keyWarning) log.warn(keyWarning)
  for (const warning of config.unreadSettings) log.warn(warning)
  const store = await openStoreFromConfig(config, {
    migrations: { onPending: (names) => log.info({ migrations: names }, migratingMessage(names)) },
    onConnectionError: (error) => log.warn({ err: error }, 'a database connection was lost; the pool opens a new one'),
    onBackgroundError: (error, what) => log.warn({ err: error }, what),
    onCircuitChange: (open, error) =>
      open ? log.error({ err: error }, 'the database did not answer in time: probing until it does') : log.warn('the database answers again'),
  })
  const metrics = createDispatchMetrics(store.deliveries, systemClock, (error) => log.warn({ err: error }, 'could not read the webhook backlog for /metrics'))
  const metricsServer =
    config.dispatchMetricsPort === undefined
      ? undefined
      : await serveMetrics({ scrape: () => metrics.registry.metrics(), contentType: metrics.registry.contentType }, config.host, config.dispatchMetricsPort)
  if (metricsServer) {
    const { address, port } = metricsServer.address() as AddressInfo
    log.info({ metrics: `http://${address.includes(':') ? `[${address}]` : address}:${port}/metrics` }, 'serving /metrics')
  }
  const dispatcher = startDispatcher({
    deliveries: store.deliveries,
    secrets,
    clock: systemClock,
    allowed: parseCidrs(config.webhookAllowCidrs),
    leaseMs: config.webhookLease * 1000,
    perEndpoint: config.webhookPerEndpoint,
    holdsProcess: true,
    onError: (error, what) => log.warn({ err: error }, what),
    onAttempt: metrics.observeWebhookAttempt,
  })
  // Kept listening after the first: a signal sent again while the deliveries under way
  // finish (npm passing on the one it got, a supervisor repeating itself) must not kill
  // the process half-way. The supervisor's SIGKILL is the way to cut it short. Listening
  // before the line that says it is running: a SIGTERM sent as soon as that line is read
  // would otherwise find no listener yet and end the process at once (seen in a test).
  let stopping = false
  const stopped = new Promise<void>((resolve) => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.on(signal, () => {
        if (stopping) return log.info({ signal }, 'already shutting down: finishing the deliveries under way')
        stopping = true
        resolve()
      })
    }
  })
  const storeName = redactUrl(config.databaseUrl)
  log.info({ store: storeName, environment: config.environment }, `petstore dispatch (${config.environment}) delivering the webhooks of ${storeName}`)
  await stopped
  log.info('shutting down: finishing the deliveries under way')
  await dispatcher.close()
  if (metricsServer) await closeMetrics(metricsServer)
  await store.close()
}

// `node dist/dispatch.js` (or with tsx, src/dispatch.ts), as server.ts runs the server:
// the command for a supervisor (systemd, Docker, Kubernetes), which signals the process
// it started. `npm run dispatch` execs it too; `npx petstore dispatch` is for a terminal
// (npm exec does not pass SIGTERM on, and would leave the dispatcher running).
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const unsupported = unsupportedNodeMessage()
  if (unsupported) {
    console.error(`petstore: ${unsupported}`)
    process.exit(1)
  }
  Promise.resolve()
    .then(() => {
      loadDotEnv()
      return runDispatch(loadConfig())
    })
    .catch((error: unknown) => {
      console.error(`petstore: ${error instanceof Error ? error.message : String(error)}`)
      process.exit(1)
    })
}
