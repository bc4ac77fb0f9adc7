// Decision D7 over HTTP, against a real server with a clock the tests move.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createManualClock } from '../src/clock.js'
import { STORES, startTestServer, type Reply, type TestServer } from './helpers/server.js'

const RATE_LIMIT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit']
const unix = (iso: string) => String(Date.parse(iso) / 1000)

function assertRefused(res: Reply, code: string, retryAfter: number) {
  assert.equal(res.status, 429, res.text)
  assert.equal((res.body as { code: string }).code, code)
  assert.equal((res.body as { status: number }).status, 429)
  assert.equal(res.headers.get('retry-after'), String(retryAfter))
  assert.equal(res.headers.get('x-ratelimit-remaining'), '0')
}

for (const store of STORES) describe(`rate limits (${store})`, () => {
  const clock = createManualClock('2026-11-22T10:00:45.000Z')
  let server: TestServer
  before(async () => {
    server = await startTestServer({ store, clock, env: { PETSTORE_BAN_AFTER: '5', PETSTORE_BAN_SECONDS: '120' } })
  })
  after(() => server.close())

  it('serves 60 requests of a free key in a UTC minute and answers the 61st 429 until the minute ends', async () => {
    clock.set('2026-11-22T10:00:45.000Z')
    const key = await server.createKey('free')
    for (let i = 59; i >= 0; i--) {
      const res = await server.request('/v1/pets', { key })
      assert.equal(res.status, 200)
      assert.equal(res.headers.get('x-ratelimit-limit'), '60')
      assert.equal(res.headers.get('x-ratelimit-remaining'), String(i))
      assert.equal(res.headers.get('x-ratelimit-reset'), unix('2026-11-22T10:01:00Z'))
    }
    const over = await server.request('/v1/pets', { key })
    assertRefused(over, 'rate_limited', 15)
    assert.match((over.body as { message: string }).message, /60 requests per minute/)
    clock.set('2026-11-22T10:01:00.000Z')
    const next = await server.request('/v1/pets', { key })
    assert.equal(next.status, 200)
    // The refused request counted in neither window: 61 served today would show 939.
    assert.equal(next.headers.get('x-ratelimit-remaining'), '59')
    assert.match(next.headers.get('ratelimit')!, /"day";r=939;/)
  })

  it('runs a key out of daily quota to UTC midnight', async () => {
    clock.set('2026-11-22T20:00:00.000Z')
    const key = await server.createKey('free')
    for (let served = 0; served < 1000; served++) {
      if (served % 60 === 0) clock.advance(60_000)
      assert.equal((await server.request('/v1/pets?limit=1', { key })).status, 200)
    }
    clock.set('2026-11-22T23:00:00.000Z')
    const over = await server.request('/v1/pets', { key })
    assertRefused(over, 'rate_limited', 3600)
    assert.equal(over.headers.get('x-ratelimit-limit'), '1000')
    assert.equal(over.headers.get('x-ratelimit-reset'), unix('2026-11-23T00:00:00Z'))
    assert.match((over.body as { message: string }).message, /Daily quota/)
    clock.set('2026-11-23T00:00:00.000Z')
    assert.equal((await server.request('/v1/pets', { key })).status, 200)
  })

  it('serves exactly the limit under concurrency: 120 at once give 60 × 200 and 60 × 429', async () => {
    clock.set('2026-11-24T10:00:00.000Z')
    const key = await server.createKey('free')
    const replies = await Promise.all(Array.from({ length: 120 }, () => server.request('/v1/pets?limit=1', { key })))
    const ok = replies.filter((r) => r.status === 200)
    assert.equal(ok.length, 60)
    assert.equal(replies.filter((r) => r.status === 429).length, 60)
    const remaining = ok.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b)
    assert.deepEqual(remaining, Array.from({ length: 60 }, (_, i) => i))
  })

  it('bans a key that keeps sending while limited, and leaves other keys alone', async () => {
    clock.set('2026-11-25T10:00:00.000Z')
    const key = await server.createKey('enterprise', { perMinute: 2, perDay: 1000 })
    const bystander = await server.createKey('enterprise', { perMinute: 2, perDay: 1000 })
    await server.request('/v1/pets', { key })
    await server.request('/v1/pets', { key })
    for (let i = 0; i < 5; i++) assertRefused(await server.request('/v1/pets', { key }), 'rate_limited', 60)
    const banned = await server.request('/v1/pets', { key })
    assertRefused(banned, 'key_banned', 120)
    assert.match((banned.body as { message: string }).message, /banned until 2026-11-25T10:02:00.000Z/)
    // The IETF fields describe the ban, not the minute it outlasts: nothing left for 120 s.
    assert.equal(banned.headers.get('ratelimit'), '"minute";r=0;t=120, "day";r=0;t=120')
    assert.equal((await server.request('/v1/pets', { key: bystander })).status, 200)
    clock.set('2026-11-25T10:01:30.000Z') // a new minute, but the ban holds
    assertRefused(await server.request('/v1/pets', { key }), 'key_banned', 30)
    clock.set('2026-11-25T10:02:00.000Z')
    assert.equal((await server.request('/v1/pets', { key })).status, 200)
  })

  it('limits requests without a valid key per client address, with the free numbers', async () => {
    clock.set('2026-11-26T10:00:00.000Z')
    for (let i = 0; i < 60; i++) {
      const res = await server.request('/v1/pets', { key: 'ps_test_wrong' })
      assert.equal(res.status, 401)
      assert.equal(res.headers.get('x-ratelimit-remaining'), String(59 - i))
    }
    assertRefused(await server.request('/v1/pets'), 'rate_limited', 60)
    // A valid key is counted on its own.
    assert.equal((await server.request('/v1/pets', { key: await server.createKey('free') })).status, 200)
  })

  it('applies a plan change within 5 seconds', async () => {
    clock.set('2026-11-27T10:00:00.000Z')
    const key = await server.createKey('free')
    for (let i = 0; i < 60; i++) await server.request('/v1/pets?limit=1', { key })
    assert.equal((await server.request('/v1/pets', { key })).status, 429)
    await server.store.accounts.update(await server.accountId(key), { plan: 'pro', custom: null })
    clock.advance(5_000)
    const res = await server.request('/v1/pets', { key })
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('x-ratelimit-limit'), '300')
  })

  it('carries the rate-limit headers on every /v1 status', async () => {
    clock.set('2026-11-28T10:00:00.000Z')
    const key = await server.createKey('enterprise', { perMinute: 1000, perDay: 10_000 })
    const pet = await server.request<{ id: number }>('/v1/pets', { method: 'POST', key, json: { name: 'Rex', categoryId: 1 } })
    const tiny = await server.createKey('enterprise', { perMinute: 1, perDay: 10 })
    await server.request('/v1/pets', { key: tiny })
    const cases: [number, () => Promise<Reply>][] = [
      [200, () => server.request('/v1/pets', { key })],
      [201, () => server.request('/v1/pets', { method: 'POST', key, json: { name: 'Rex', categoryId: 1 } })],
      [400, () => server.request('/v1/pets?limit=0', { key })],
      [401, () => server.request('/v1/pets', { key: 'nope' })],
      [404, () => server.request('/v1/orders', { key })],
      [405, () => server.request('/v1/pets', { method: 'PUT', key })],
      [413, () => server.request('/v1/pets', { method: 'POST', key, json: { name: 'x'.repeat(70_000), categoryId: 1 } })],
      [415, () => server.request('/v1/pets', { method: 'POST', key, body: 'x', headers: { 'content-type': 'text/plain' } })],
      [429, () => server.request('/v1/pets', { key: tiny })],
      [200, () => server.request('/v1/openapi.json')],
    ]
    for (const [status, send] of cases) {
      const res = await send()
      assert.equal(res.status, status, res.text)
      for (const name of RATE_LIMIT_HEADERS) assert.ok(res.headers.get(name), `${status}: ${name}`)
    }
    clock.set('2031-01-01T00:00:00Z')
    const gone = await server.request(`/v1/pets/${pet.body.id}`, { key })
    assert.equal(gone.status, 410)
    for (const name of RATE_LIMIT_HEADERS) assert.ok(gone.headers.get(name), `410: ${name}`)
  })
})

describe('rate limits behind a proxy', () => {
  it('counts each X-Forwarded-For address apart only when PETSTORE_TRUST_PROXY says so', async () => {
    const clock = createManualClock('2026-11-22T10:00:00.000Z')
    for (const trust of ['false', 'true']) {
      const server = await startTestServer({ clock, env: { PETSTORE_TRUST_PROXY: trust } })
      try {
        for (let i = 0; i < 60; i++) await server.request('/v1/pets', { headers: { 'x-forwarded-for': '203.0.113.7' } })
        const other = await server.request('/v1/pets', { headers: { 'x-forwarded-for': '203.0.113.8' } })
        assert.equal(other.status, trust === 'true' ? 401 : 429, `trust proxy ${trust}`)
      } finally {
        await server.close()
      }
    }
  })

  it("with the proxy's address, takes the address the proxy saw, so a client cannot name its own; with true it can", async () => {
    const clock = createManualClock('2026-11-22T10:00:00.000Z')
    // The proxy appends the address it saw (203.0.113.7) to whatever the client sent.
    const forged = (i: number) => ({ 'x-forwarded-for': `198.51.100.${i}, 203.0.113.7` })
    for (const trust of ['127.0.0.1', 'true']) {
      const server = await startTestServer({ clock, env: { PETSTORE_TRUST_PROXY: trust } })
      try {
        for (let i = 0; i < 60; i++) await server.request('/v1/pets', { headers: forged(i) })
        const next = await server.request('/v1/pets', { headers: forged(200) })
        assert.equal(next.status, trust === 'true' ? 401 : 429, `trust proxy ${trust}`)
        // And the proxy's own requests are not that client's.
        const another = await server.request('/v1/pets', { headers: { 'x-forwarded-for': '203.0.113.8' } })
        assert.equal(another.status, 401, `trust proxy ${trust}: another client`)
      } finally {
        await server.close()
      }
    }
  })
})
