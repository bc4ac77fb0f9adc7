// Real PostgreSQL and Redis for the tests that need them. Under CI=true a missing
// server fails those tests; elsewhere they are skipped with one line saying why.
import { randomBytes } from 'node:crypto'
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import pg from 'pg'
import { Redis } from 'ioredis'

export const POSTGRES_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres'
export const REDIS_URL = 'redis://127.0.0.1:6379'

async function reachable(check: () => Promise<unknown>): Promise<boolean> {
  try {
    await check()
    return true
  } catch {
    return false
  }
}

/**
 * Resolves to false (skip, with a line on stderr) or true (run). Under CI a
 * missing server throws, so the suite fails instead of passing unseen.
 */
export async function needs(service: 'postgres' | 'redis', suite: string): Promise<boolean> {
  const ok =
    service === 'postgres'
      ? await reachable(async () => {
          const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 2_000 })
          await client.connect()
          await client.end()
        })
      : await reachable(async () => {
          const redis = new Redis(REDIS_URL, { connectTimeout: 2_000, maxRetriesPerRequest: 0, lazyConnect: true, retryStrategy: () => null })
          redis.on('error', () => {})
          try {
            await redis.connect()
            await redis.ping()
          } finally {
            redis.disconnect()
          }
        })
  return runOrSkip(ok, suite, `${service} is not reachable at ${service === 'postgres' ? '127.0.0.1:5432' : '127.0.0.1:6379'}`)
}

/** True to run; false to skip, with a line on stderr saying why. Under CI=true a missing dependency throws instead. */
export function runOrSkip(available: boolean, suite: string, missing: string): boolean {
  if (available) return true
  if (process.env.CI === 'true') throw new Error(`${suite}: ${missing}, and CI=true requires it`)
  console.error(`# skipped "${suite}": ${missing}`)
  return false
}

/** A fresh, uniquely named PostgreSQL database; drop() removes it. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `petstore_test_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  return {
    url: `postgres://postgres@127.0.0.1:5432/${name}`,
    async drop() {
      const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL })
      await client.connect()
      await client.query(`drop database if exists ${name} with (force)`)
      await client.end()
    },
  }
}

/** A key prefix of its own, so test runs never see each other's counters. */
export const uniqueRedisPrefix = () => `petstore-test-${randomBytes(6).toString('hex')}`

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** A Redis server of the test's own, on a port of its own, that the test may kill. */
export async function startOwnRedis(port: number): Promise<{ url: string; stop(): Promise<void> }> {
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  })
  const url = `redis://127.0.0.1:${port}`
  for (let i = 0; i < 50; i++) {
    const up = await reachable(async () => {
      const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
      redis.on('error', () => {})
      try {
        await redis.connect()
        await redis.ping()
      } finally {
        redis.disconnect()
      }
    })
    if (up) break
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.kill('SIGKILL')
      }),
  }
}
