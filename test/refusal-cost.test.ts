// Saying no costs the database nothing: over HTTP against a real server, each
// refusal below is counted in the store's calls (/metrics, petstore_store_calls_total),
// which must not grow with the number of refused requests. On every store, with the
// counters in memory and in Redis.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { generateApiKey } from '../src/api-keys/key-format.js'
import { PLAN_LIMITS } from '../src/vocabulary/plans.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'
import { needs, REDIS_URL, uniqueRedisPrefix } from './helpers/services.js'

const BAN_AFTER = 2
const REQUESTS = 120

/** The store's calls so far, as /metrics reports them. */
async function storeCalls(server: TestServer): Promise<number> {
  const text = (await server.request<string>('/metrics')).text
  const line = /^petstore_store_calls_total (\d+)$/m.exec(text)
  assert.ok(line, 'petstore_store_calls_total is in /metrics')
  return Number(line[1])
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
    server = await startTestServer({ store, env })
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

  it('refuses made-up keys from a banned address without looking them up', async () => {
    // The address is banned by keyless requests past the free plan's limit.
    let res
    for (let i = 0; i < PLAN_LIMITS.free.perMinute + BAN_AFTER + 1; i++) res = await server.request('/v1/pets')
    assert.equal(res!.status, 429)
    assert.equal((res!.body as { code: string }).code, 'key_banned')
    const before = await storeCalls(server)
    for (let i = 0; i < REQUESTS; i++) {
      const refused = await server.request('/v1/pets', { key: generateApiKey('test') })
      assert.equal(refused.status, 429, refused.text)
      assert.equal((refused.body as { code: string }).code, 'key_banned')
      assert.ok(refused.headers.get('retry-after'))
    }
    const refusedUsage = await server.request('/v1/usage', { key: generateApiKey('test') })
    assert.equal(refusedUsage.status, 429, refusedUsage.text)
    assert.equal((await storeCalls(server)) - before, 0)
  })
})

for (const { store, redis } of SETUPS) describe(`a banned key (${store}, counters in ${redis ? 'Redis' : 'memory'})`, () => {
  let server: TestServer
  before(async () => {
    const env: Record<string, string> = { PETSTORE_BAN_AFTER: String(BAN_AFTER), PETSTORE_BAN_SECONDS: '600' }
    if (redis) Object.assign(env, { REDIS_URL, PETSTORE_REDIS_PREFIX: uniqueRedisPrefix() })
    server = await startTestServer({ store, env })
  })
  after(() => server.close())

  it('is answered 429 on GET /v1/usage like anywhere else, and its flood costs no store call', async () => {
    const key = await server.createKey('enterprise', { perMinute: 1, perDay: 1_000 })
    assert.equal((await server.request('/v1/pets', { key })).status, 200)
    // A limited key may still read its usage.
    for (let i = 0; i < BAN_AFTER; i++) assert.equal((await server.request('/v1/pets', { key })).status, 429)
    const limited = await server.request('/v1/usage', { key })
    assert.equal(limited.status, 200, limited.text)
    assert.equal((await server.request('/v1/pets', { key })).status, 429) // the refusal past BAN_AFTER bans it
    const before = await storeCalls(server)
    for (let i = 0; i < REQUESTS; i++) {
      const res = await server.request(i % 2 ? '/v1/usage' : '/v1/pets', { key })
      assert.equal(res.status, 429, res.text)
      assert.equal((res.body as { code: string }).code, 'key_banned')
      assert.ok(Number(res.headers.get('retry-after')) > 0)
      assert.equal(res.headers.get('x-ratelimit-remaining'), '0')
    }
    // The key's cache entry may be refreshed once meanwhile, and the usage flushed.
    assert.ok((await storeCalls(server)) - before <= 2, `${(await storeCalls(server)) - before} calls for ${REQUESTS} refused requests`)
  })
})
