// Property-based: whatever arrives, the service answers without a 5xx, every error
// is a well-formed Error body whose status is the HTTP status, and it stays up.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import fc from 'fast-check'
import { ERROR_CODES } from '../src/errors.js'
import { startTestServer, type Reply, type TestServer } from './helpers/server.js'

const RUNS = 150

function assertWellFormed(res: Reply, allowed: number[]) {
  assert.ok(allowed.includes(res.status), `unexpected ${res.status}: ${res.text}`)
  if (res.status < 400) return
  const body = res.body as Record<string, unknown>
  assert.equal(typeof body, 'object', res.text)
  assert.ok((ERROR_CODES as string[]).includes(body.code as string), res.text)
  assert.equal(typeof body.message, 'string')
  assert.equal(body.status, res.status)
}

// Values that break naive code: wrong types, huge and odd numbers, odd Unicode.
const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 2 ** 53, 2 ** 64, 1e308, -0, '1', '', ' ', '\u0000', '\uFFFF', '𝓡𝓮𝔁', 'null', true, null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.integer(), { maxKeys: 2 }),
)

const petLike = fc.record(
  {
    name: nasty,
    categoryId: nasty,
    status: fc.oneof(nasty, fc.constantFrom('available', 'pending', 'sold')),
    extra: nasty,
  },
  { requiredKeys: [] },
)

describe('fuzzing', () => {
  let server: TestServer
  let key: string
  before(async () => {
    server = await startTestServer()
    key = await server.createKey('enterprise', { perMinute: 1_000_000, perDay: 10_000_000 })
  })
  after(() => server.close())

  it('POST /v1/pets: generated and mutated bodies get 201 or a 4xx Error body', async () => {
    const prototypeKeys = fc.constantFrom('{"__proto__":{"a":1}}', '{"constructor":{"prototype":{}}}', '{"name":"x","categoryId":1,"__proto__":null}')
    const body = fc.oneof(
      petLike.map((v) => JSON.stringify(v)),
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.string({ unit: 'binary' }),
      prototypeKeys,
      fc.integer({ min: 1, max: 2000 }).map((n) => '['.repeat(n)),
    )
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded'), async (text, type) => {
        const res = await server.request('/v1/pets', { method: 'POST', key, body: text, headers: { 'content-type': type } })
        assertWellFormed(res, [201, 400, 413, 415])
      }),
      { numRuns: RUNS },
    )
  })

  it('GET /v1/pets: generated query strings, duplicated parameters included, get 200 or 400', async () => {
    const param = fc.tuple(fc.constantFrom('limit', 'status', 'cursor', 'other', 'limit[]'), fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.integer().map(String)))
    await fc.assert(
      fc.asyncProperty(fc.array(param, { maxLength: 5 }), async (params) => {
        const query = params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')
        assertWellFormed(await server.request(`/v1/pets?${query}`, { key }), [200, 400])
      }),
      { numRuns: RUNS },
    )
  })

  it('GET /v1/pets/{petId}: generated ids get 200, 400 or 404', async () => {
    const id = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.bigInt().map(String), fc.double().map(String))
    await fc.assert(
      fc.asyncProperty(id, fc.boolean(), async (raw, encode) => {
        const path = encode ? encodeURIComponent(raw) : raw.replace(/[/?#\s]/g, '')
        const res = await server.request(`/v1/pets/${path}`, { key })
        assertWellFormed(res, [200, 400, 404, 405])
      }),
      { numRuns: RUNS },
    )
  })

  it('generated Authorization and Content-Type headers never cause a 5xx', async () => {
    const header = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) })
    await fc.assert(
      fc.asyncProperty(header, header, fc.constantFrom('GET', 'POST', 'PUT', 'DELETE'), async (authorization, contentType, method) => {
        const res = await server.request('/v1/pets', {
          method,
          headers: { authorization: `Bearer ${authorization}`, 'content-type': contentType || 'application/json' },
          body: method === 'POST' || method === 'PUT' ? '{"name":"x","categoryId":1}' : undefined,
        })
        assertWellFormed(res, [401, 429])
      }),
      { numRuns: RUNS },
    )
  })

  it('raw bytes on the socket never bring the process down', async () => {
    const { port } = new URL(server.url)
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2048 }), async (bytes) => {
        await new Promise<void>((resolve) => {
          const socket = connect(Number(port), '127.0.0.1')
          socket.on('error', () => resolve())
          socket.on('close', () => resolve())
          socket.setTimeout(100, () => socket.destroy())
          socket.end(Buffer.from(bytes))
        })
      }),
      { numRuns: 50 },
    )
    assert.equal((await server.request('/healthz')).status, 200)
  })
})
