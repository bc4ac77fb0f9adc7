// Process entry: config → store → app → listen. SIGTERM and SIGINT drain
// in-flight requests, then close the store.
import { pathToFileURL } from 'node:url'
import { buildApp } from './app.js'
import { loadConfig, type Config } from './config.js'
import { openStore } from './db/store.js'

export async function startServer(config: Config) {
  const store = await openStore(config.databaseUrl)
  const app = await buildApp({ config, store })
  app.addHook('onClose', async () => store.close())
  await app.listen({ host: config.host, port: config.port })

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      app.log.info({ signal }, 'shutting down: draining in-flight requests')
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

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  startServer(loadConfig()).catch((error: unknown) => {
    console.error(`petstore: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  })
}
