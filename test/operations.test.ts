// What operators rely on: health, readiness, metrics, logs, and answers to broken HTTP.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { createManualClock, systemClock } from '../src/clock.js'
import { loadConfig } from '../src/config.js'
import { createRateLimiterFromConfig } from '../src/rate-limit/from-config.js'
import { rawHttp as raw } from './helpers/raw-http.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { freePort } from './helpers/services.js'

describe('operations', () => {
  const logs = new PassThrough()
  const lines: string[] = []
  logs.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)))
  /** Resolves once a log line carries this request id; fails after 5 s. */
  const loggedRequest = (reqId: string) =>
    new Promise<void>((resolve, reject) => {
      const seen = () => lines.some((line) => (JSON.parse(line) as { reqId?: string }).reqId === reqId)
      if (seen()) return resolve()
      const timer = setTimeout(() => {
        logs.off('data', check)
        reject(new Error(`no log line for request ${reqId} within 5 s`))
      }, 5_000)
      const check = () => {
        if (!seen()) return
        clearTimeout(timer)
        logs.off('data', check)
        resolve()
      }
      logs.on('data', check)
    })
  let server: TestServer
  let key: string
  before(async () => {
    // A clock that stands still: the metrics test's three requests must share one minute.
    server = await startTestServer({ logStream: logs, clock: createManualClock('2026-11-24T10:00:30Z') })
    key = await server.createKey('enterprise', { perMinute: 2, perDay: 100 })
  })
  after(() => server.close())

  it('GET /healthz answers 200 without a key', async () => {
    const res = await server.request('/healthz')
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, { status: 'ok' })
  })

  it('GET /readyz answers 200 naming each check', async () => {
    const res = await server.request('/readyz')
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, { status: 'ready', checks: { store: 'ok' } })
  })

  it('GET /metrics counts requests by route and status, and rate-limit refusals', async () => {
    await server.request('/v1/pets', { key })
    await server.request('/v1/pets/1', { key })
    await server.request('/v1/pets', { key }) // the third in a minute: 429
    const res = await server.request('/metrics')
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type')!, /^text\/plain/)
    assert.match(res.text, /petstore_http_requests_total\{route="\/v1\/pets",method="GET",status="200"\} 1/)
    assert.match(res.text, /petstore_http_requests_total\{route="\/v1\/pets\/:petId",method="GET",status="404"\} 1/)
    assert.match(res.text, /petstore_http_request_duration_seconds_bucket\{le="0.1",route="\/v1\/pets"/)
    assert.match(res.text, /petstore_rate_limit_refusals_total\{code="rate_limited"\} 1/)
    assert.match(res.text, /petstore_rate_limiter_degraded 0/)
    assert.match(res.text, /petstore_store_errors_total 0/)
  })

  it('writes one JSON log line per request, with its id, and never the key', async () => {
    lines.length = 0
    const res = await server.request('/v1/pets', { key, headers: { 'x-request-id': 'trace-abc.123' } })
    assert.equal(res.headers.get('x-request-id'), 'trace-abc.123')
    // A key where it does not belong, in the query string or the path: refused, and not logged either.
    await server.request(`/v1/pets?api_key=${key}&token=s3cret-token`)
    await server.request(`/v1/pets/${key}`)
    // A line is written once the response is sent, so it may come after the client
    // has read it; a later request's line comes after every line of this one.
    await server.request('/healthz', { headers: { 'x-request-id': 'after-trace-abc.123' } })
    await loggedRequest('after-trace-abc.123')
    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    assert.equal(entries.filter((e) => e.reqId === 'trace-abc.123').length, 1)
    assert.ok(lines.length > 0)
    for (const line of lines) {
      assert.ok(!line.includes(key), 'the key is not logged')
      assert.ok(!line.includes('s3cret-token'), 'a secret in the query string is not logged')
      assert.ok(!/authorization/i.test(line), 'the Authorization header is not logged')
    }
  })

  it('logs the path as it was sent, even one whose percent-encoding does not decode', async () => {
    const roomy = await server.createKey('free') // the suite's key allows 2 a minute
    lines.length = 0
    const res = await server.request('/v1/pets/%zz?limit=1', { key: roomy, headers: { 'x-request-id': 'undecodable-path' } })
    assert.equal(res.status, 400)
    await server.request('/healthz', { headers: { 'x-request-id': 'after-undecodable-path' } })
    await loggedRequest('after-undecodable-path')
    const entry = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((e) => e.reqId === 'undecodable-path')
    assert.deepEqual(
      { method: entry?.method, url: entry?.url, route: entry?.route, status: entry?.status },
      { method: 'GET', url: '/v1/pets/%zz?limit=1', route: '/v1/pets/:petId', status: 400 },
    )
  })

  it('echoes a sane X-Request-Id on every response, errors included, and replaces an insane one', async () => {
    for (const path of ['/v1/pets', '/v1/nowhere', '/nowhere', '/healthz']) {
      const res = await server.request(path, { headers: { 'x-request-id': 'abc-123' } })
      assert.equal(res.headers.get('x-request-id'), 'abc-123', path)
    }
    for (const insane of ['x'.repeat(200), 'a b', '<script>']) {
      const res = await server.request('/healthz', { headers: { 'x-request-id': insane } })
      assert.match(res.headers.get('x-request-id')!, /^[0-9a-f-]{36}$/)
    }
  })

  it('answers malformed HTTP with 400 and oversized headers with 431, as Error bodies, and keeps serving', async () => {
    const malformed = await raw(server.url, 'GARBAGE\r\n\r\n')
    assert.match(malformed, /^HTTP\/1.1 400 /)
    assert.deepEqual(JSON.parse(malformed.split('\r\n\r\n')[1]!), { code: 'bad_request', message: 'The request is not valid HTTP/1.1.', status: 400 })
    const big = await raw(server.url, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
    assert.match(big, /^HTTP\/1.1 431 /)
    assert.equal((JSON.parse(big.split('\r\n\r\n')[1]!) as { code: string }).code, 'request_header_fields_too_large')
    assert.equal((await server.request('/healthz')).status, 200)
  })
})

describe('readiness when a dependency is down', () => {
  it('answers 503 naming the store when the database does not answer', async () => {
    const server = await startTestServer()
    try {
      await server.store.close()
      const res = await server.request('/readyz')
      assert.equal(res.status, 503)
      assert.equal((res.body as { code: string }).code, 'service_unavailable')
      assert.match((res.body as { message: string }).message, /store/)
    } finally {
      await server.app.close()
    }
  })

  it('stays ready, saying "degraded", while Redis cannot be reached in fail-open mode, and keeps serving /v1', async () => {
    const config = loadConfig({ REDIS_URL: `redis://127.0.0.1:${await freePort()}` })
    const limiter = createRateLimiterFromConfig(config, systemClock, { onRedisTransition: () => {} })
    const server = await startTestServer({ limiter })
    try {
      const key = await server.createKey()
      assert.equal((await server.request('/v1/pets', { key })).status, 200, 'fail open')
      const res = await server.request<{ checks: { redis: string }; details: { field: string; message: string }[] }>('/readyz')
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.checks.redis, 'degraded')
      assert.equal(res.body.details[0]?.field, 'redis')
      assert.equal(res.body.details[0]?.message, 'cannot be reached; rate limits are counted on this instance alone until Redis answers', 'in our words, not the Redis client\'s')
      assert.match((await server.request('/metrics')).text, /^petstore_rate_limiter_degraded 1$/m, 'the gauge line, not its HELP text')
    } finally {
      await server.close()
      await limiter.close()
    }
  })
})
