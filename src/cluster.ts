// PETSTORE_WORKERS=N: N processes share the port (node:cluster), one per core.
// The primary applies migrations once, forks the workers, replaces a worker that
// dies, and on SIGTERM/SIGINT passes the signal on and waits for them to drain.
import cluster from 'node:cluster'
import { hostname } from 'node:os'
import type { Config } from './config.js'
import { openStoreFromConfig } from './db/from-config.js'

export async function runPrimary(config: Config): Promise<void> {
  const store = await openStoreFromConfig(config)
  await store.close()

  let stopping = false
  const fork = () => cluster.fork()
  for (let i = 0; i < config.workers; i++) fork()
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0)
      return
    }
    log(config, 'error', { worker: worker.process.pid, code, signal }, `worker ${worker.process.pid} exited (${signal ?? code}); starting another`)
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

// pino's numeric levels: the primary's lines sit among the workers' request lines
// on stdout, so they are JSON lines of the same shape (level, time, pid, hostname, msg).
const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity }

function log(config: Config, level: 'info' | 'warn' | 'error', fields: Record<string, unknown>, msg: string) {
  if (LEVELS[level]! < (LEVELS[config.logLevel] ?? LEVELS.info!)) return
  process.stdout.write(`${JSON.stringify({ level: LEVELS[level], time: Date.now(), pid: process.pid, hostname: hostname(), ...fields, msg })}\n`)
}
