// The shared limiter on a real Redis: one atomic script per request, windows that
// expire, several instances enforcing one limit, and the behaviour while Redis is
// down (fail open by default, 503 when PETSTORE_REDIS_FAILURE=closed).
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Redis } from 'ioredis'
import { issueApiKey } from '../src/api-keys/issue-key.js'
import { systemClock } from '../src/clock.js'
import { loadConfig } from '../src/config.js'
import { openStore } from '../src/db/store.js'
import { createRateLimiterFromConfig } from '../src/rate-limit/from-config.js'
import { createRedisCounterStore } from '../src/rate-limit/redis-store.js'
import type { HitRequest } from '../src/rate-limit/counter-store.js'
import { spawnServer, type ServerProcess } from './helpers/process.js'
import { startTestServer } from './helpers/server.js'
import { createTestDatabase, freePort, needs, REDIS_URL, startOwnRedis, uniqueRedisPrefix } from './helpers/services.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Waits out the end of a minute on Redis's clock, so a test's requests share one window. */
async function awayFromMinuteEdge(redis: Redis) {
  const [seconds] = await redis.time()
  const intoMinute = Number(seconds) % 60
  if (intoMinute > 50) await sleep((61 - intoMinute) * 1000)
}

describe('Redis counter store', async () => {
  if (!(await needs('redis', 'Redis counter store'))) return
  const prefix = uniqueRedisPrefix()
  const a = createRedisCounterStore({ url: REDIS_URL, prefix })
  const b = createRedisCounterStore({ url: REDIS_URL, prefix })
  await Promise.all([a.ready(), b.ready()])
  after(async () => {
    const keys = await a.redis.keys(`${prefix}:*`)
    if (keys.length > 0) await a.redis.del(...keys)
    await a.close()
    await b.close()
  })
  const request = (identity: string, perMinute = 60, banAfter = 20, banMs = 900_000): HitRequest => ({
    identity,
    limits: { perMinute, perDay: 1000 },
    banAfter,
    banMs,
  })

  it('gives two instances one limit: 100 concurrent hits over both serve exactly 60', async () => {
    await awayFromMinuteEdge(a.redis)
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).hit(request('key:concurrent'))))
    assert.equal(results.filter((r) => r.outcome === 'served').length, 60)
    assert.deepEqual(
      results.filter((r) => r.outcome === 'served').map((r) => r.minuteCount).sort((x, y) => x - y),
      Array.from({ length: 60 }, (_, i) => i + 1),
    )
    assert.ok(results.filter((r) => r.outcome === 'limited').every((r) => r.minuteCount === 60 && r.dayCount === 60))
  })

  it('takes the time from Redis and lets every key expire with its window', async () => {
    await awayFromMinuteEdge(a.redis)
    const result = await a.hit(request('key:expiry'))
    const [seconds] = await a.redis.time()
    assert.ok(Math.abs(result.now - Number(seconds) * 1000) < 2_000)
    const keys = await a.redis.keys(`${prefix}:rl:{key:expiry}:*`)
    assert.equal(keys.length, 2)
    for (const key of keys) {
      const ttl = await a.redis.pttl(key)
      const limit = key.includes(':m:') ? 61_000 : 86_401_000
      assert.ok(ttl > 0 && ttl <= limit, `${key} expires (${ttl} ms)`)
    }
  })

  it('bans after more than banAfter refusals and lifts the ban when it expires', async () => {
    await awayFromMinuteEdge(a.redis)
    const hit = () => a.hit(request('key:ban', 1, 2, 1_500))
    assert.equal((await hit()).outcome, 'served')
    assert.equal((await hit()).outcome, 'limited')
    assert.equal((await hit()).outcome, 'limited')
    const banned = await hit()
    assert.equal(banned.outcome, 'banned')
    assert.ok(banned.bannedUntil - banned.now === 1_500)
    assert.equal((await b.hit(request('key:ban', 1, 2, 1_500))).outcome, 'banned', 'the ban is shared')
    await sleep(1_600)
    assert.equal((await hit()).outcome, 'limited', 'the ban is over; the minute is still used up')
  })
})

describe('Redis outage', async () => {
  if (!(await needs('redis', 'Redis outage'))) return
  const port = await freePort()
  let redis = await startOwnRedis(port)
  const prefix = uniqueRedisPrefix()
  after(() => redis.stop())

  for (const mode of ['open', 'closed'] as const) {
    it(`fail ${mode}: ${mode === 'open' ? 'keeps serving on per-instance counters, logs each transition once, and returns to Redis' : 'answers 503 service_unavailable while Redis is down'}`, async () => {
      const config = loadConfig({ REDIS_URL: redis.url, PETSTORE_REDIS_PREFIX: `${prefix}-${mode}`, PETSTORE_REDIS_FAILURE: mode })
      const transitions: boolean[] = []
      const limiter = createRateLimiterFromConfig(config, systemClock, { onRedisTransition: (degraded) => transitions.push(degraded) })
      await limiter.ready()
      const server = await startTestServer({ limiter, env: { REDIS_URL: redis.url } })
      const probe = new Redis(redis.url, { lazyConnect: true })
      probe.on('error', () => {})
      try {
        const key = await server.createKey('free')
        assert.equal((await server.request('/v1/pets', { key })).status, 200)
        assert.equal(limiter.degraded, false)

        await redis.stop()
        const started = Date.now()
        for (let i = 0; i < 10; i++) {
          const res = await server.request('/v1/pets', { key })
          if (mode === 'open') {
            assert.equal(res.status, 200, res.text)
            assert.ok(res.headers.get('x-ratelimit-remaining'))
          } else {
            assert.equal(res.status, 503, res.text)
            assert.deepEqual(Object.keys(res.body as object), ['code', 'message', 'status'])
            assert.equal((res.body as { code: string }).code, 'service_unavailable')
          }
        }
        assert.ok(Date.now() - started < 5_000, 'no request waits long on a dead Redis')
        assert.equal(limiter.degraded, true)
        assert.deepEqual(transitions, [true], 'the fallback is reported once')
        const down = await server.request<{ details: { field: string }[] }>('/readyz')
        assert.equal(down.status, 503, 'not ready while Redis is down')
        assert.deepEqual(down.body.details.map((d) => d.field), ['redis'])

        redis = await startOwnRedis(port)
        const deadline = Date.now() + 15_000
        while (limiter.degraded && Date.now() < deadline) {
          await server.request('/v1/pets', { key })
          await sleep(200)
        }
        assert.equal(limiter.degraded, false, 'back on Redis without a restart')
        assert.deepEqual(transitions, [true, false])
        assert.equal((await server.request('/v1/pets', { key })).status, 200)
        assert.equal((await server.request('/readyz')).status, 200, 'ready again')
        await probe.connect()
        assert.ok((await probe.keys(`${prefix}-${mode}:rl:*`)).length > 0, 'counting in Redis again')
      } finally {
        probe.disconnect()
        await server.close()
        await limiter.close()
      }
    })
  }
})

describe('two instances on PostgreSQL and Redis', async () => {
  if (!(await needs('postgres', 'two instances')) || !(await needs('redis', 'two instances'))) return
  let database: Awaited<ReturnType<typeof createTestDatabase>>
  let servers: ServerProcess[]
  let key: string
  let revocable: { secret: string; id: number }
  before(async () => {
    database = await createTestDatabase()
    const store = await openStore(database.url)
    key = (await issueApiKey(store.apiKeys, systemClock, { name: 'shared', plan: 'free', custom: null, environment: 'test' })).secret
    const r = await issueApiKey(store.apiKeys, systemClock, { name: 'doomed', plan: 'free', custom: null, environment: 'test' })
    revocable = { secret: r.secret, id: r.record.id }
    await store.close()
    const env = { DATABASE_URL: database.url, REDIS_URL, PETSTORE_REDIS_PREFIX: uniqueRedisPrefix() }
    servers = await Promise.all([spawnServer(env), spawnServer(env)])
  })
  after(async () => {
    for (const s of servers ?? []) s.child.kill('SIGKILL')
    await Promise.all((servers ?? []).map((s) => s.exited))
    await database?.drop()
  })

  const call = (server: ServerProcess, path: string, init: RequestInit = {}, secret = key) =>
    fetch(server.url + path, { ...init, headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', ...init.headers } })

  it('reads through one instance a pet created through the other', async () => {
    const created = await call(servers[0]!, '/v1/pets', { method: 'POST', body: JSON.stringify({ name: 'Shared', categoryId: 4 }) })
    assert.equal(created.status, 201)
    const pet = (await created.json()) as { id: number }
    const read = await call(servers[1]!, `/v1/pets/${pet.id}`)
    assert.equal(read.status, 200)
    assert.deepEqual(await read.json(), pet)
  })

  it('lists through one instance a pet created through the other, in the very next list call', async () => {
    const list = async () => ((await (await call(servers[1]!, '/v1/pets?status=pending&limit=100')).json()) as { id: number }[]).map((p) => p.id)
    await Promise.all([list(), list()]) // any page this instance might keep is now taken
    const created = await call(servers[0]!, '/v1/pets', { method: 'POST', body: JSON.stringify({ name: 'Listed', categoryId: 4, status: 'pending' }) })
    const pet = (await created.json()) as { id: number }
    assert.ok((await list()).includes(pet.id))
  })

  it('enforces one limit: 100 concurrent requests of a free key over both instances serve exactly 60', async () => {
    const redis = new Redis(REDIS_URL)
    await awayFromMinuteEdge(redis)
    redis.disconnect()
    const fresh = await (async () => {
      const store = await openStore(database.url)
      const { secret } = await issueApiKey(store.apiKeys, systemClock, { name: 'burst', plan: 'free', custom: null, environment: 'test' })
      await store.close()
      return secret
    })()
    const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => call(servers[i % 2]!, '/v1/pets?limit=1', {}, fresh)))
    const ok = replies.filter((r) => r.status === 200)
    assert.equal(ok.length, 60)
    assert.equal(replies.filter((r) => r.status === 429).length, 40)
    const remaining = ok.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((x, y) => x - y)
    assert.deepEqual(remaining, Array.from({ length: 60 }, (_, i) => i), 'the instances agree on Remaining')
  })

  it('refuses a revoked key on every instance within 5 seconds', async () => {
    for (const s of servers) assert.equal((await call(s, '/v1/pets', {}, revocable.secret)).status, 200)
    const store = await openStore(database.url)
    await store.apiKeys.revoke(revocable.id, Date.now())
    await store.close()
    await sleep(5_000)
    for (const s of servers) assert.equal((await call(s, '/v1/pets', {}, revocable.secret)).status, 401)
  })
})
