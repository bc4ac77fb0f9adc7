// PETSTORE_WORKERS=N: N processes share the port (node:cluster), one per core.
// The primary applies migrations once, forks the workers, replaces a worker that
// dies, and on SIGTERM/SIGINT passes the signal on and waits for them to drain.
import cluster from 'node:cluster'
import type { Config } from './config.js'
import { openStore } from './db/store.js'

export async function runPrimary(config: Config): Promise<void> {
  const store = await openStore(config.databaseUrl)
  await store.close()

  let stopping = false
  const fork = () => cluster.fork()
  for (let i = 0; i < config.workers; i++) fork()
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0)
      return
    }
    console.error(`petstore: worker ${worker.process.pid} exited (${signal ?? code}); starting another`)
    fork()
  })
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      stopping = true
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal)
    })
  }
}

export const isPrimaryOf = (config: Config) => config.workers > 1 && cluster.isPrimary
