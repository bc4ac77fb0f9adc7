// A real server on port 0 over a fresh SQLite file, for tests that talk HTTP.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { buildApp } from '../../src/app.js'
import type { WritePacing } from '../../src/webhooks/write-pacing.js'
import { secretBoxFromConfig } from '../../src/secrets/secret-box.js'
import type { Metrics } from '../../src/plugins/metrics.js'
import { hashApiKey, keyEnvironmentFor } from '../../src/api-keys/key-format.js'
import type { Limits } from '../../src/vocabulary/plans.js'
import { systemClock, type Clock } from '../../src/clock.js'
import { loadConfig } from '../../src/config.js'
import { openStore } from '../../src/db/open-store.js'
import { createRateLimiterFromConfig } from '../../src/rate-limit/from-config.js'
import type { RateLimiter } from '../../src/rate-limit/limiter.js'
import { issueTestKey, type TestKeyOptions } from './keys.js'
import { createTestDatabase, needs } from './services.js'

/** The tests' main key for webhook signing secrets (32 bytes, base64). */
export const TEST_SECRET_KEY = Buffer.alloc(32, 7).toString('base64')

export type StoreKind = 'sqlite' | 'postgres'

/**
 * The stores every HTTP behaviour is tested on: SQLite always; PostgreSQL when it
 * can be reached (and always under CI=true, where a missing server fails the run).
 */
export const STORES: StoreKind[] = (await needs('postgres', 'the PostgreSQL store suites')) ? ['sqlite', 'postgres'] : ['sqlite']

export interface TestServerOptions {
  /** Which store to run on: a temp SQLite file (default) or a fresh PostgreSQL database. */
  store?: StoreKind
  clock?: Clock
  /** By default, the one the config names (as server.ts builds it), closed with the server. */
  limiter?: RateLimiter
  /** Where log lines go; silent when not given. */
  logStream?: NodeJS.WritableStream
  /** Environment variables as the server would read them. */
  env?: Record<string, string>
  /** GET /metrics' metrics, to count a test's own dispatcher into (as server.ts does its own). */
  metrics?: Metrics
  /** Paces the writes that make events (server.ts makes one beside its dispatcher). */
  writePacing?: WritePacing
}

export interface Reply<T = unknown> {
  status: number
  headers: Headers
  body: T
  text: string
}

export async function startTestServer(options: TestServerOptions = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-test-'))
  const postgres = options.store === 'postgres' ? await createTestDatabase() : undefined
  const databaseUrl = postgres?.url ?? `sqlite:${join(dir, 'petstore.db')}`
  // A main key of the tests' own (a test that wants the key file beside the database sets it empty).
  const config = loadConfig({ DATABASE_URL: databaseUrl, PETSTORE_SECRET_KEY: TEST_SECRET_KEY, ...options.env })
  const secrets = secretBoxFromConfig(config)
  const clock = options.clock ?? systemClock
  const store = await openStore(config.databaseUrl)
  const ownLimiter = options.limiter ? undefined : createRateLimiterFromConfig(config, clock, { onRedisTransition: () => {} })
  await ownLimiter?.ready()
  const limiter = options.limiter ?? ownLimiter!
  const app = await buildApp({ config, store, clock, limiter, secrets, logger: options.logStream ? { level: 'info', stream: options.logStream } : false, ...(options.metrics ? { metrics: options.metrics } : {}), ...(options.writePacing ? { writePacing: options.writePacing } : {}) })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`

  async function request<T = unknown>(path: string, init: RequestInit & { key?: string; json?: unknown } = {}): Promise<Reply<T>> {
    const headers = new Headers(init.headers)
    if (init.key) headers.set('authorization', `Bearer ${init.key}`)
    let body = init.body
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json')
      body = JSON.stringify(init.json)
    }
    const response = await fetch(url + path, { ...init, headers, body })
    const text = await response.text()
    let parsed: unknown = text
    if (response.headers.get('content-type')?.startsWith('application/json')) parsed = JSON.parse(text)
    return { status: response.status, headers: response.headers, body: parsed as T, text }
  }

  return {
    url,
    config,
    /** The box the app seals signing secrets with: a test's dispatcher opens them with it. */
    secrets,
    store,
    clock,
    app,
    request,
    /** Creates a key straight in the store, as `petstore keys create` does. */
    async createKey(plan = 'free', custom: Partial<Limits> = {}, more: Pick<TestKeyOptions, 'scopes' | 'expiresAt' | 'name' | 'accountId'> = {}): Promise<string> {
      return (await issueTestKey(store.apiKeys, { plan, custom, clock, environment: keyEnvironmentFor(config.environment), ...more })).secret
    },
    /** The store's id of a key made by createKey (Idempotency-Key records are scoped by it). */
    async keyId(secret: string): Promise<number> {
      const record = await store.apiKeys.findByHash(hashApiKey(secret))
      if (!record) throw new Error('no such key in the store')
      return record.id
    },
    /** The store's id of the account of a key made by createKey (orders, endpoints and Idempotency-Key records are its). */
    async accountId(secret: string): Promise<number> {
      const record = await store.apiKeys.findByHash(hashApiKey(secret))
      if (!record) throw new Error('no such key in the store')
      return record.account.id
    },
    async close() {
      await app.close()
      await ownLimiter?.close()
      await store.close()
      await postgres?.drop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export type TestServer = Awaited<ReturnType<typeof startTestServer>>
