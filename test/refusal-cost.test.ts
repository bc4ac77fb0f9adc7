// Saying no costs the database nothing: over HTTP against a real server, each
// refusal below is counted in the store's calls (/metrics, petstore_store_calls_total),
// which must not grow with the number of refused requests. On every store, with the
// counters in memory and in Redis.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { generateApiKey, hashApiKey } from '../src/api-keys/key-format.js'
import { toApiKeyRecord } from '../src/api-keys/api-key-record.js'
import { loadConfig } from '../src/config.js'
import { createRateLimiterFromConfig } from '../src/rate-limit/from-config.js'
import type { RateLimiter } from '../src/rate-limit/limiter.js'
import { createManualClock } from '../src/clock.js'
import { PLAN_LIMITS } from '../src/vocabulary/plans.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'
import { needs, REDIS_URL, uniqueRedisPrefix } from './helpers/services.js'

const BAN_AFTER = 2
const REQUESTS = 120

/** The store's calls so far, as /metrics reports them: all, and those no request waited for (paid by time). */
async function storeCallsOf(server: TestServer): Promise<{ all: number; background: number }> {
  const text = (await server.request<string>('/metrics')).text
  const all = /^petstore_store_calls_total (\d+)$/m.exec(text)
  const background = /^petstore_store_background_calls_total (\d+)$/m.exec(text)
  assert.ok(all && background, 'petstore_store_calls_total and petstore_store_background_calls_total are in /metrics')
  return { all: Number(all[1]), background: Number(background[1]) }
}
const storeCalls = async (server: TestServer) => (await storeCallsOf(server)).all

/** Runs `body` counting the key lookups it started: a request's, or a refresh no request waits for. */
async function lookupsDuring(server: TestServer, body: () => Promise<void>): Promise<number> {
  let lookups = 0
  const parts = [server.store.apiKeys, server.store.background.apiKeys]
  const originals = parts.map((apiKeys) => apiKeys.findByHash)
  parts.forEach((apiKeys, i) => {
    apiKeys.findByHash = (hash) => {
      lookups++
      return originals[i]!.call(apiKeys, hash)
    }
  })
  try {
    await body()
  } finally {
    parts.forEach((apiKeys, i) => (apiKeys.findByHash = originals[i]!))
  }
  return lookups
}

/** Every case of "bearer" and one to three spaces: distinct headers naming one key. */
function headerVariants(key: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => {
    const scheme = [...'bearer'].map((c, bit) => ((i >> bit) & 1 ? c.toUpperCase() : c)).join('')
    return `${scheme}${' '.repeat(1 + ((i >> 6) % 3))}${key}`
  })
}

const withRedis = await needs('redis', 'refusal cost with Redis counters')
const SETUPS = [...STORES.map((store) => ({ store, redis: false })), ...(withRedis ? [{ store: STORES[0]!, redis: true }] : [])]

for (const { store, redis } of SETUPS) describe(`refusals cost no store calls (${store}, counters in ${redis ? 'Redis' : 'memory'})`, () => {
  let server: TestServer
  before(async () => {
    const env: Record<string, string> = { PETSTORE_BAN_AFTER: String(BAN_AFTER), PETSTORE_BAN_SECONDS: '600' }
    if (redis) Object.assign(env, { REDIS_URL, PETSTORE_REDIS_PREFIX: uniqueRedisPrefix() })
    // A clock of its own: the lookups a banned address has are counted a minute.
    server = await startTestServer({ store, env, clock: createManualClock() })
  })
  after(() => server.close())

  it('looks a key up once whatever the case of "Bearer" and the spaces after it', async () => {
    const key = await server.createKey('enterprise', { perMinute: 1_000_000, perDay: 1_000_000 })
    assert.equal((await server.request('/v1/pets', { key })).status, 200)
    const before = await storeCalls(server)
    for (const authorization of headerVariants(key, REQUESTS)) {
      const res = await server.request('/v1/store/inventory', { headers: { authorization } })
      assert.equal(res.status, 200, `${JSON.stringify(authorization)}: ${res.text}`)
    }
    // Each request reads the inventory (one call); none looks the key up again. At
    // most a usage flush and a last-used touch besides.
    assert.ok((await storeCalls(server)) - before <= REQUESTS + 2, `${(await storeCalls(server)) - before} calls for ${REQUESTS} requests`)
  })

  it('remembers briefly that a key is unknown: the same made-up key costs one lookup', async () => {
    const made = generateApiKey('test')
    const before = await storeCalls(server)
    for (let i = 0; i < 20; i++) {
      const res = await server.request('/v1/pets', { key: made })
      assert.equal(res.status, 401, res.text)
      assert.match(res.text, /not recognised/)
    }
    assert.ok((await storeCalls(server)) - before <= 1, `${(await storeCalls(server)) - before} calls for 20 requests of one unknown key`)
  })

  it('from a banned address, looks up 10 keys not cached a minute, so its visitor\'s own key is served, and refuses the rest unlooked-up', async () => {
    // The address is banned by keyless requests past the free plan's limit (as a web page's <img> tags can make its visitors send).
    let res
    for (let i = 0; i < PLAN_LIMITS.free.perMinute + BAN_AFTER + 1; i++) res = await server.request('/v1/pets')
    assert.equal(res!.status, 429)
    assert.equal((res!.body as { code: string; message: string }).code, 'key_banned')
    assert.match((res!.body as { message: string }).message, /^This address is temporarily banned, for requests without a valid API key, until /)
    const visitor = await server.createKey('enterprise', { perMinute: 1_000, perDay: 1_000 })
    assert.equal((await server.request('/v1/pets', { key: visitor })).status, 200, 'the visitor\'s own key, looked up')
    // The minute's other 9 lookups, on made-up keys: looked up, and refused by the address's ban.
    let before = await storeCalls(server)
    for (let i = 0; i < 9; i++) {
      const refused = await server.request('/v1/pets', { key: generateApiKey('test') })
      assert.equal(refused.status, 429, refused.text)
      assert.equal((refused.body as { code: string }).code, 'key_banned')
    }
    assert.equal((await storeCalls(server)) - before, 9)
    before = await storeCalls(server)
    for (let i = 0; i < REQUESTS; i++) {
      const refused = await server.request('/v1/pets', { key: generateApiKey('test') })
      assert.equal(refused.status, 429, refused.text)
      assert.equal((refused.body as { code: string }).code, 'key_banned')
      assert.ok(refused.headers.get('retry-after'))
    }
    const refusedUsage = await server.request('/v1/usage', { key: generateApiKey('test') })
    assert.equal(refusedUsage.status, 429, refusedUsage.text)
    assert.equal((await storeCalls(server)) - before, 0, 'the rest: not looked up')
    assert.equal((await server.request('/v1/pets', { key: visitor })).status, 200, 'the visitor\'s key, cached now, served still')
  })
})

for (const { store, redis } of SETUPS) describe(`a banned key (${store}, counters in ${redis ? 'Redis' : 'memory'})`, () => {
  let server: TestServer
  let limiter: RateLimiter
  const clock = createManualClock()
  before(async () => {
    const env: Record<string, string> = { PETSTORE_BAN_AFTER: String(BAN_AFTER), PETSTORE_BAN_SECONDS: '600' }
    if (redis) Object.assign(env, { REDIS_URL, PETSTORE_REDIS_PREFIX: uniqueRedisPrefix() })
    // The server's limiter, as server.ts builds it, held here to lift a ban as an operator would.
    limiter = createRateLimiterFromConfig(loadConfig({ DATABASE_URL: 'sqlite:unused.db', ...env }), clock, { onRedisTransition: () => {} })
    await limiter.ready()
    server = await startTestServer({ store, env, clock, limiter })
  })
  after(async () => {
    await server.close()
    await limiter.close()
  })

  /** A key of one request a minute, banned: its limit, then refusals past BAN_AFTER. */
  async function bannedKey(): Promise<string> {
    const key = await server.createKey('enterprise', { perMinute: 1, perDay: 1_000 })
    assert.equal((await server.request('/v1/pets', { key })).status, 200)
    for (let i = 0; i < BAN_AFTER + 1; i++) assert.equal((await server.request('/v1/pets', { key })).status, 429)
    const banned = await server.request<{ code: string }>('/v1/usage', { key })
    assert.equal(banned.body.code, 'key_banned', banned.text)
    return key
  }

  async function assertBanned(key: string, path: string) {
    const res = await server.request<{ code: string }>(path, { key })
    assert.equal(res.status, 429, res.text)
    assert.equal(res.body.code, 'key_banned')
    assert.ok(Number(res.headers.get('retry-after')) > 0)
    assert.equal(res.headers.get('x-ratelimit-remaining'), '0')
  }

  it('is answered 429 on GET /v1/usage like anywhere else, and its flood costs no store call a request waits for', async () => {
    const key = await server.createKey('enterprise', { perMinute: 1, perDay: 1_000 })
    assert.equal((await server.request('/v1/pets', { key })).status, 200)
    // A limited key may still read its usage.
    for (let i = 0; i < BAN_AFTER; i++) assert.equal((await server.request('/v1/pets', { key })).status, 429)
    const limited = await server.request('/v1/usage', { key })
    assert.equal(limited.status, 200, limited.text)
    assert.equal((await server.request('/v1/pets', { key })).status, 429) // the refusal past BAN_AFTER bans it
    const before = await storeCallsOf(server)
    for (let i = 0; i < REQUESTS; i++) await assertBanned(key, i % 2 ? '/v1/usage' : '/v1/pets')
    const after = await storeCallsOf(server)
    assert.equal(after.all - after.background - (before.all - before.background), 0, 'store calls a request waited for')
    // Paid by time: the usage history's write (every 5 s), the key's last use (once a minute).
    assert.ok(after.background - before.background <= 2, `${after.background - before.background} background calls`)
  })

  it('is not looked up again while its ban holds, however many times its record outlives its lifetime', async () => {
    const key = await bannedKey()
    const lookups = await lookupsDuring(server, async () => {
      for (let step = 0; step < 4; step++) {
        clock.advance(2_500) // past the record's refresh, then past its 3 s lifetime
        for (let i = 0; i < 10; i++) await assertBanned(key, i % 2 ? '/v1/usage' : '/v1/pets')
        // With Redis, past the second a ban Redis reported is known here: Redis is asked again, not the store.
        if (redis && step === 1) await new Promise((resolve) => setTimeout(resolve, 1_100))
      }
    })
    assert.equal(lookups, 0, 'lookups of a banned key')
  })

  it('a key revoked or expired is not looked up again, however long its record outlives its lifetime: both are final', async () => {
    const revoked = await server.createKey('enterprise', { perMinute: 1_000, perDay: 10_000 })
    const expiring = await server.createKey('enterprise', { perMinute: 1_000, perDay: 10_000 }, { expiresAt: clock.now() + 1_000 })
    await server.store.apiKeys.revoke(await server.keyId(revoked), clock.now(), false)
    clock.advance(1_000)
    // Each looked up once, and remembered as it stands.
    assert.match((await server.request('/v1/pets', { key: revoked })).text, /revoked/)
    assert.match((await server.request('/v1/pets', { key: expiring })).text, /expired/)
    const lookups = await lookupsDuring(server, async () => {
      for (let step = 0; step < 4; step++) {
        clock.advance(2_500) // past the record's refresh, then past its 3 s lifetime
        for (const [key, why] of [[revoked, /revoked/], [expiring, /expired/]] as const) {
          const res = await server.request<{ message: string }>('/v1/pets', { key })
          assert.equal(res.status, 401, res.text)
          assert.match(res.body.message, why)
        }
      }
    })
    assert.equal(lookups, 0, 'lookups of a revoked or expired key')
  })

  it('is looked up again once its ban is lifted, and answered as it now stands', async () => {
    const key = await bannedKey()
    const id = await server.keyId(key)
    await server.store.apiKeys.revoke(id, clock.now(), false)
    clock.advance(5_000)
    await assertBanned(key, '/v1/pets') // the ban is decided first: the record is not looked up
    assert.ok(await limiter.unban(toApiKeyRecord((await server.store.apiKeys.findByHash(hashApiKey(key)))!)))
    const res = await server.request<{ code: string; message: string }>('/v1/pets', { key })
    assert.equal(res.status, 401, res.text)
    assert.match(res.body.message, /revoked/)
  })
})
