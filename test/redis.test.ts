// The shared limiter on a real Redis: the script's own concerns (Redis's clock, keys
// that expire, two clients sharing one limit, one script call per identity per
// event-loop turn), the behaviour while Redis is down (fail open by default, 503
// when PETSTORE_REDIS_FAILURE=closed) and the way back without traffic, and several
// server processes enforcing one limit. The counting rules themselves are the
// contract suite's (counter-stores.test.ts), run on both stores.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Redis } from 'ioredis'
import { createManualClock, systemClock } from '../src/clock.js'
import { loadConfig } from '../src/config.js'
import { createKeyIn, withStore } from './helpers/keys.js'
import { createRateLimiterFromConfig } from '../src/rate-limit/from-config.js'
import { createRedisCounterStore } from '../src/rate-limit/redis-store.js'
import type { HitRequest } from '../src/rate-limit/counter-store.js'
import { spawnServer, type ServerProcess } from './helpers/process.js'
import { startTestServer } from './helpers/server.js'
import { createTestDatabase, freePort, needs, REDIS_URL, startOwnRedis, uniqueRedisPrefix } from './helpers/services.js'

/** Polls `probe` every 100 ms until it returns a value, or fails once `withinMs` has passed. */
async function eventually<T>(what: string, withinMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + withinMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) assert.fail(`${what}: not within ${withinMs} ms`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe('Redis counter store', async () => {
  if (!(await needs('redis', 'Redis counter store'))) return
  const prefix = uniqueRedisPrefix()
  // Both clients count on one injected clock, so a test's requests never straddle a minute.
  const clock = createManualClock('2026-11-22T10:00:30.000Z')
  type Store = ReturnType<typeof createRedisCounterStore>
  let a: Store, b: Store, onRedisTime: Store
  // In before, not here: when --test-name-pattern skips every test of the suite,
  // its hooks do not run, and clients opened here would keep the process alive.
  before(async () => {
    a = createRedisCounterStore({ url: REDIS_URL, prefix, clock })
    b = createRedisCounterStore({ url: REDIS_URL, prefix, clock })
    onRedisTime = createRedisCounterStore({ url: REDIS_URL, prefix })
    await Promise.all([a.ready(), b.ready(), onRedisTime.ready()])
  })
  after(async () => {
    const keys = await a.redis.keys(`${prefix}:*`)
    if (keys.length > 0) await a.redis.del(...keys)
    await Promise.all([a.close(), b.close(), onRedisTime.close()])
  })
  const request = (identity: string): HitRequest => ({ identity, banIdentity: identity, limits: { perMinute: 60, perDay: 1000 }, banAfter: 20, banMs: 900_000 })

  it('gives two instances one limit: 100 concurrent hits over both serve exactly 60', async () => {
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).hit(request('key:concurrent'))))
    assert.equal(results.filter((r) => r.outcome === 'served').length, 60)
    assert.deepEqual(
      results.filter((r) => r.outcome === 'served').map((r) => r.minuteCount).sort((x, y) => x - y),
      Array.from({ length: 60 }, (_, i) => i + 1),
    )
    assert.ok(results.filter((r) => r.outcome === 'limited').every((r) => r.minuteCount === 60 && r.dayCount === 60))
  })

  it('takes the time from Redis unless told otherwise, and lets every key expire with its window', async () => {
    const result = await onRedisTime.hit(request('key:expiry'))
    const [seconds] = await onRedisTime.redis.time()
    assert.ok(Math.abs(result.now - Number(seconds) * 1000) < 2_000)
    const keys = await onRedisTime.redis.keys(`${prefix}:rl:{key:expiry}:*`)
    assert.equal(keys.length, 2)
    for (const key of keys) {
      const ttl = await onRedisTime.redis.pttl(key)
      const limit = key.includes(':m:') ? 61_000 : 86_401_000
      assert.ok(ttl > 0 && ttl <= limit, `${key} expires (${ttl} ms)`)
    }
  })

  it('counts each request against its own limits on Redis\'s time too: a raised quota serves at once', async () => {
    // The daily window: no minute boundary can fall between these hits and reset the count.
    const hit = (limits: HitRequest['limits']) => onRedisTime.hit({ identity: 'key:raised', banIdentity: 'key:raised', limits, banAfter: 20, banMs: 900_000 })
    const twoADay = { perMinute: 1000, perDay: 2 }
    assert.deepEqual([(await hit(twoADay)).outcome, (await hit(twoADay)).outcome, (await hit(twoADay)).outcome], ['served', 'served', 'limited'])
    const threeADay = { perMinute: 1000, perDay: 3 }
    assert.deepEqual([(await hit(threeADay)).outcome, (await hit(threeADay)).outcome], ['served', 'limited'])
    assert.equal((await hit(twoADay)).outcome, 'limited')
  })

  it('shares a ban between instances', async () => {
    const tight = (store: typeof a) => store.hit({ identity: 'key:ban', banIdentity: 'key:ban', limits: { perMinute: 1, perDay: 100 }, banAfter: 1, banMs: 60_000 })
    assert.deepEqual([(await tight(a)).outcome, (await tight(a)).outcome, (await tight(a)).outcome], ['served', 'limited', 'banned'])
    assert.equal((await tight(b)).outcome, 'banned')
  })

  it('shows every instance the counts and the ban without counting, and lifts the ban for all of them', async () => {
    const tight = (store: typeof a) => store.hit({ identity: 'key:unban', banIdentity: 'key:unban', limits: { perMinute: 1, perDay: 100 }, banAfter: 1, banMs: 60_000 })
    await tight(a)
    assert.deepEqual(await b.peek('key:unban', 'key:unban'), { now: clock.now(), minuteCount: 1, dayCount: 1, bannedUntil: 0 })
    await tight(a)
    await tight(a)
    const banned = await b.peek('key:unban', 'key:unban')
    assert.equal(banned.bannedUntil, clock.now() + 60_000)
    assert.deepEqual(await b.peek('key:unban', 'key:unban'), banned, 'peeking counts nothing')
    assert.equal(await b.unban('key:unban', 'key:unban'), true)
    assert.equal(await a.unban('key:unban', 'key:unban'), false, 'no ban left to lift')
    assert.equal((await a.peek('key:unban', 'key:unban')).bannedUntil, 0)
    assert.equal((await tight(a)).outcome, 'limited', 'unbanned; the minute\'s window is kept')
  })
})

describe('Redis counter store batching', async () => {
  if (!(await needs('redis', 'Redis counter store batching'))) return
  const clock = createManualClock('2026-11-22T10:00:30.000Z')
  let redis: Awaited<ReturnType<typeof startOwnRedis>>
  let store: ReturnType<typeof createRedisCounterStore>
  before(async () => {
    // A server of its own, so that its command counts are this test's alone.
    redis = await startOwnRedis(await freePort())
    store = createRedisCounterStore({ url: redis.url, clock })
    await store.ready()
  })
  after(async () => {
    await store.close()
    await redis.stop()
  })
  const request = (identity: string): HitRequest => ({ identity, banIdentity: identity, limits: { perMinute: 10, perDay: 1000 }, banAfter: 5, banMs: 60_000 })
  /** Script calls the server has run: EVAL the first time on a connection, EVALSHA after. */
  const scriptCalls = async () => {
    const stats = await store.redis.info('commandstats')
    return [...stats.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)].reduce((sum, [, calls]) => sum + Number(calls), 0)
  }

  it('sends one script call per identity for the requests of one event-loop turn', async () => {
    await store.hit(request('key:warm-up'))
    const before = await scriptCalls()
    const busy = Array.from({ length: 20 }, () => store.hit(request('key:busy')))
    const other = Array.from({ length: 5 }, () => store.hit(request('key:other')))
    const [busyResults, otherResults] = await Promise.all([Promise.all(busy), Promise.all(other)])
    assert.equal((await scriptCalls()) - before, 2, 'one call for key:busy, one for key:other')
    assert.deepEqual(
      busyResults.map((r) => [r.outcome, r.minuteCount]),
      Array.from({ length: 20 }, (_, i) => (i < 10 ? ['served', i + 1] : i < 15 ? ['limited', 10] : ['banned', 10])),
    )
    assert.deepEqual(otherResults.map((r) => r.minuteCount), [1, 2, 3, 4, 5])
  })

  it('rejects every request of a turn when its script call fails, so each falls back on its own', async () => {
    const unreachable = createRedisCounterStore({ url: `redis://127.0.0.1:${await freePort()}`, connectTimeoutMs: 100 })
    try {
      const settled = await Promise.allSettled(Array.from({ length: 5 }, () => unreachable.hit(request('key:down'))))
      assert.deepEqual(settled.map((s) => s.status), Array(5).fill('rejected'))
    } finally {
      await unreachable.close()
    }
  })
})

describe('Redis outage', async () => {
  if (!(await needs('redis', 'Redis outage'))) return
  const prefix = uniqueRedisPrefix()
  let port: number
  let redis: Awaited<ReturnType<typeof startOwnRedis>>
  before(async () => {
    port = await freePort()
    redis = await startOwnRedis(port)
  })
  after(() => redis.stop())

  type Ready = { status?: string; code?: string; checks?: Record<string, string>; details?: { field: string; message: string }[] }

  for (const mode of ['open', 'closed'] as const) {
    const does =
      mode === 'open'
        ? 'keeps serving on per-instance counters and stays ready ("degraded")'
        : 'answers 503 with Retry-After on /v1 and is not ready'
    it(`fail ${mode}: ${does} while Redis is down, then returns to Redis with no /v1 request`, async () => {
      const config = loadConfig({ REDIS_URL: redis.url, PETSTORE_REDIS_PREFIX: `${prefix}-${mode}`, PETSTORE_REDIS_FAILURE: mode })
      const transitions: boolean[] = []
      const limiter = createRateLimiterFromConfig(config, systemClock, { onRedisTransition: (degraded) => transitions.push(degraded) })
      await limiter.ready()
      const server = await startTestServer({ limiter, env: { REDIS_URL: redis.url } })
      const probe = new Redis(redis.url, { lazyConnect: true })
      probe.on('error', () => {})
      const gauge = async () => /^petstore_rate_limiter_degraded (\d)$/m.exec((await server.request('/metrics')).text)?.[1]
      try {
        const key = await server.createKey('free')
        assert.equal((await server.request('/v1/pets', { key })).status, 200)
        const up = await server.request<Ready>('/readyz')
        assert.equal(up.status, 200)
        assert.deepEqual(up.body.checks, { store: 'ok', redis: 'ok' })

        await redis.stop()
        const down = await eventually('/readyz sees Redis down', 5_000, async () => {
          const res = await server.request<Ready>('/readyz')
          return res.body.checks?.redis === 'ok' ? undefined : res
        })
        if (mode === 'open') {
          assert.equal(down.status, 200, down.text)
          assert.equal(down.body.status, 'ready')
          assert.deepEqual(down.body.checks, { store: 'ok', redis: 'degraded' })
          assert.equal(down.body.details?.[0]?.field, 'redis')
          assert.match(down.body.details?.[0]?.message ?? '', /this instance alone/)
        } else {
          assert.equal(down.status, 503, down.text)
          assert.equal(down.body.code, 'service_unavailable')
          assert.deepEqual(down.body.details?.map((d) => d.field), ['redis'])
        }

        for (let i = 0; i < 10; i++) {
          const res = await server.request('/v1/pets', { key })
          if (mode === 'open') {
            assert.equal(res.status, 200, res.text)
            assert.ok(res.headers.get('x-ratelimit-remaining'))
          } else {
            assert.equal(res.status, 503, res.text)
            assert.equal(res.headers.get('retry-after'), '1')
            assert.deepEqual(Object.keys(res.body as object), ['code', 'message', 'status'])
            assert.equal((res.body as { code: string }).code, 'service_unavailable')
          }
        }
        assert.equal(await gauge(), '1')
        assert.deepEqual(transitions, [true], 'the fallback is reported once')

        // Back up: no /v1 request from here until the gauge and readiness say so. The
        // gauge first, without /readyz (whose probe would also bring the limiter back).
        redis = await startOwnRedis(port)
        await eventually('the degraded gauge returns to 0', 3_000, async () => ((await gauge()) === '0' ? true : undefined))
        const ready = await server.request<Ready>('/readyz')
        assert.equal(ready.status, 200, ready.text)
        assert.deepEqual(ready.body, { status: 'ready', checks: { store: 'ok', redis: 'ok' } })
        assert.deepEqual(transitions, [true, false], 'the return is reported once')

        assert.equal((await server.request('/v1/pets', { key })).status, 200)
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

describe('Redis shared by databases', async () => {
  if (!(await needs('redis', 'Redis shared by databases'))) return

  it('gives each key counters of its own, though a recreated database hands out the same key ids again', async () => {
    // Two stores, one Redis prefix: as after a database is dropped and created again.
    const env = { REDIS_URL, PETSTORE_REDIS_PREFIX: uniqueRedisPrefix() }
    // The recreated database's keys are made a second later (each store on a clock of its own).
    const [before, after] = [
      await startTestServer({ env, clock: createManualClock('2026-11-24T10:00:00Z') }),
      await startTestServer({ env, clock: createManualClock('2026-11-24T10:00:01Z') }),
    ]
    try {
      const old = await before.createKey('free')
      const fresh = await after.createKey('free')
      assert.equal(await before.keyId(old), await after.keyId(fresh), 'the same id in both databases')
      // One a day (Redis's own time counts): no minute boundary can fall between the two requests.
      const tight = await before.createKey('enterprise', { perMinute: 1, perDay: 1 })
      const tightAgain = await after.createKey('enterprise', { perMinute: 1, perDay: 1 })
      assert.equal((await before.request('/v1/pets', { key: tight })).status, 200)
      assert.equal((await before.request('/v1/pets', { key: tight })).status, 429)
      const res = await after.request('/v1/pets', { key: tightAgain })
      assert.equal(res.status, 200, 'a new key starts with its whole quota')
      assert.equal(res.headers.get('x-ratelimit-remaining'), '0')
    } finally {
      await Promise.all([before.close(), after.close()])
    }
  })
})

describe('two instances on PostgreSQL and Redis', async () => {
  if (!(await needs('postgres', 'two instances')) || !(await needs('redis', 'two instances'))) return
  let database: Awaited<ReturnType<typeof createTestDatabase>>
  let servers: ServerProcess[]
  let key: string
  let revocable: { secret: string; id: number }
  before(async () => {
    database = await createTestDatabase()
    key = (await createKeyIn(database.url)).secret
    revocable = await createKeyIn(database.url)
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

  it('enforces one limit: 100 concurrent requests of a key allowed 60 a day, over both instances, serve exactly 60', async () => {
    // 60 a day as well as a minute: a burst that straddles a minute edge still meets the one limit.
    const fresh = (await createKeyIn(database.url, { plan: 'enterprise', custom: { perMinute: 60, perDay: 60 } })).secret
    const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => call(servers[i % 2]!, '/v1/pets?limit=1', {}, fresh)))
    const ok = replies.filter((r) => r.status === 200)
    assert.equal(ok.length, 60)
    assert.equal(replies.filter((r) => r.status === 429).length, 40)
    const remaining = ok.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((x, y) => x - y)
    assert.deepEqual(remaining, Array.from({ length: 60 }, (_, i) => i), 'the instances agree on Remaining')
  })

  it('refuses a revoked key on every instance within 5 seconds', async () => {
    for (const s of servers) assert.equal((await call(s, '/v1/pets', {}, revocable.secret)).status, 200)
    await withStore(database.url, (store) => store.apiKeys.revoke(revocable.id, Date.now(), false))
    for (const s of servers) {
      await eventually('the revoked key is refused', 5_500, async () => ((await call(s, '/v1/pets', {}, revocable.secret)).status === 401 ? true : undefined))
    }
  })
})
