// Process entry: config → store → app → listen. SIGTERM and SIGINT drain
// in-flight requests, then close the store.
import { pathToFileURL } from 'node:url'
import { buildApp } from './app.js'
import { isPrimaryOf, runPrimary } from './cluster.js'
import { loadConfig, type Config } from './config.js'
import { openStoreFromConfig } from './db/from-config.js'
import { unsupportedNodeMessage } from './node-support.js'

export async function startServer(config: Config) {
  // Until the app (and its logger) exists, a lost connection goes to stderr.
  const connectionLost = { report: (error: Error) => console.error(`petstore: database connection lost: ${error.message}`) }
  const store = await openStoreFromConfig(config, { onConnectionError: (error) => connectionLost.report(error) })
  const app = await buildApp({ config, store })
  connectionLost.report = (error) => app.log.warn({ err: error }, 'a database connection was lost; the pool opens a new one')
  app.addHook('onClose', async () => store.close())
  await app.listen({ host: config.host, port: config.port })

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
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
    })
  }
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
    .then(() => serve(loadConfig()))
    .catch((error: unknown) => {
      console.error(`petstore: ${error instanceof Error ? error.message : String(error)}`)
      process.exit(1)
    })
}
