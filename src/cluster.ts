// PETSTORE_WORKERS=N: N processes share the port (node:cluster), one per core.
// The primary applies migrations once, forks the workers, replaces a worker that
// dies, and on SIGTERM/SIGINT passes the signal on and waits for them to drain.
import cluster, { type Worker } from 'node:cluster'
import { hostname } from 'node:os'
import { AggregatorRegistry, type Registry } from 'prom-client'
import { trustProxyWarning, type Config } from './config.js'
import { openStoreFromConfig } from './db/from-config.js'
import { localKeyWarning, requireKeyInProduction } from './secrets/secret-box.js'
import { migratingMessage } from './db/database.js'

/** A worker that served this long after it listened was healthy: its death is not a failure to start. */
const HEALTHY_AFTER_MS = 10_000
const FIRST_RETRY_MS = 100
const MAX_RETRY_MS = 2_000
const MAX_START_FAILURES = 8
/** How long past PETSTORE_SHUTDOWN_TIMEOUT the primary waits for its workers before it kills them. */
const STOP_MARGIN_S = 5

export async function runPrimary(config: Config): Promise<void> {
  // Before the migrations: production without PETSTORE_SECRET_KEY stops here, not in each worker.
  requireKeyInProduction(config)
  // Said once, here, rather than by each worker.
  for (const warning of startWarnings(config)) log(config, 'warn', {}, warning)
  const store = await openStoreFromConfig(config, { migrations: { onPending: (names) => log(config, 'info', { migrations: names }, migratingMessage(names)) } })
  await store.close()

  let stopping = false
  let exitCode = 0
  const exitOnceAllGone = () => {
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(exitCode)
  }
  // A worker that dies before it listens, or soon after (a port taken, a store it
  // cannot open), would die again at once: replace it after a growing delay, and give
  // up after MAX_START_FAILURES such deaths in a row rather than crash-loop for ever.
  // Counted from when it listened, not from when it was forked: on a loaded machine a
  // worker took 10 s to fail to listen, and counted as healthy, the loop never ended.
  let failures = 0
  const listeningAt = new Map<number, number>()
  cluster.on('listening', (worker) => listeningAt.set(worker.id, Date.now()))
  answerMetricsRequests()
  for (let i = 0; i < config.workers; i++) cluster.fork()
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      // A worker cut short while draining (killed, or out of time) failed its requests in
      // flight; one that had not listened yet had none.
      if (code !== 0 && listeningAt.has(worker.id)) exitCode = 1
      return exitOnceAllGone()
    }
    const listenedAt = listeningAt.get(worker.id)
    listeningAt.delete(worker.id)
    failures = listenedAt === undefined || Date.now() - listenedAt < HEALTHY_AFTER_MS ? failures + 1 : 0
    const how = signal ?? `code ${code}`
    if (failures >= MAX_START_FAILURES) {
      log(config, 'fatal', { worker: worker.process.pid, code, signal, failures }, `workers keep dying before they listen or within ${HEALTHY_AFTER_MS / 1000} s of it (${failures} in a row, the last with ${how}; its error is above); giving up`)
      console.error(`petstore: workers keep failing to start (${failures} in a row); giving up. The workers' own error is above.`)
      stopping = true
      exitCode = 1
      for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGTERM')
      return exitOnceAllGone()
    }
    const delay = failures === 0 ? 0 : Math.min(FIRST_RETRY_MS * 2 ** (failures - 1), MAX_RETRY_MS)
    log(config, 'error', { worker: worker.process.pid, code, signal, delayMs: delay }, `worker ${worker.process.pid} exited (${how}); starting another${delay ? ` in ${delay} ms` : ''}`)
    setTimeout(() => {
      if (!stopping) cluster.fork()
    }, delay)
  })
  // A signal to the whole process group reaches the workers from the kernel too: they
  // take the first and ignore the rest (server.ts). Listened to for good, so that a
  // second one never kills the primary while its workers drain.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return
      stopping = true
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal)
      // Each worker exits 1 after PETSTORE_SHUTDOWN_TIMEOUT by itself; this is for one that cannot.
      setTimeout(() => {
        log(config, 'error', {}, `workers still running ${config.shutdownTimeout + STOP_MARGIN_S} s after ${signal}; killing them`)
        exitCode = 1
        for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL')
      }, (config.shutdownTimeout + STOP_MARGIN_S) * 1000).unref()
      exitOnceAllGone() // none left: between a death and its delayed replacement
    })
  }
}

export const isPrimaryOf = (config: Config) => config.workers > 1 && cluster.isPrimary

/** What the configuration should tell the operator at start: a local main key on a shared store, PETSTORE_ variables nothing reads. Said by one process: a worker leaves them to its primary. */
export function startWarnings(config: Config): string[] {
  // (A worker of another's cluster, PM2's say, has no primary of ours to say them.)
  if (config.workers > 1 && cluster.isWorker) return []
  return [localKeyWarning(config), trustProxyWarning(config), ...config.unreadSettings].filter((warning) => warning !== undefined)
}

// GET /metrics with workers: the worker that takes the scrape asks the primary, which
// asks every worker for its registry (prom-client's cluster aggregation) and answers the
// sum, so one scrape shows the whole instance, not one worker of it.
const METRICS_REQUEST = 'petstore:metrics-request'
const METRICS_ANSWER = 'petstore:metrics-answer'
const METRICS_TIMEOUT_MS = 5_000

interface MetricsMessage {
  type: string
  id: number
  text?: string
  error?: string
}

function answerMetricsRequests() {
  const aggregator = new AggregatorRegistry()
  cluster.on('message', (worker: Worker, message: MetricsMessage) => {
    if (message?.type !== METRICS_REQUEST) return
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: METRICS_ANSWER, id: message.id, text }),
      (error: unknown) => worker.send({ type: METRICS_ANSWER, id: message.id, error: error instanceof Error ? error.message : String(error) }),
    )
  })
}

/**
 * In a worker: offers `registry` to the primary's aggregation, and answers a function
 * that scrapes every worker through the primary. Undefined outside a cluster.
 */
export function clusterMetricsOf(registry: Registry): (() => Promise<string>) | undefined {
  if (!cluster.isWorker) return undefined
  // An AggregatorRegistry made in a worker is how prom-client starts answering the primary's requests.
  new AggregatorRegistry()
  AggregatorRegistry.setRegistries(registry)
  const pending = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>()
  let next = 0
  process.on('message', (message: MetricsMessage) => {
    if (message?.type !== METRICS_ANSWER) return
    const waiting = pending.get(message.id)
    pending.delete(message.id)
    if (message.error !== undefined) waiting?.reject(new Error(`the primary could not gather the workers' metrics: ${message.error}`))
    else waiting?.resolve(message.text ?? '')
  })
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++
      const timer = setTimeout(() => {
        pending.delete(id)
        reject(new Error(`the primary did not answer a metrics request within ${METRICS_TIMEOUT_MS / 1000} s`))
      }, METRICS_TIMEOUT_MS)
      pending.set(id, {
        resolve: (text) => {
          clearTimeout(timer)
          resolve(text)
        },
        reject: (error) => {
          clearTimeout(timer)
          reject(error)
        },
      })
      process.send?.({ type: METRICS_REQUEST, id })
    })
}

// pino's numeric levels: the primary's lines sit among the workers' request lines
// on stdout, so they are JSON lines of the same shape (level, time, pid, hostname, msg).
const LEVELS: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity }

function log(config: Config, level: 'info' | 'warn' | 'error' | 'fatal', fields: Record<string, unknown>, msg: string) {
  if (LEVELS[level]! < (LEVELS[config.logLevel] ?? LEVELS.info!)) return
  process.stdout.write(`${JSON.stringify({ level: LEVELS[level], time: Date.now(), pid: process.pid, hostname: hostname(), ...fields, msg })}\n`)
}
