// Inputs that outside tools sent and our own tests did not (issue 12): over-long and
// malformed paths, NUL and lone surrogates, bytes that are not UTF-8, out-of-range
// and repeated query parameters, a trailing slash. On every store.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Pet } from '../src/schemas/pet.js'
import { STORES, startTestServer, type Reply, type TestServer } from './helpers/server.js'

type ErrorReply = Reply<{ code: string; message: string; status: number }>

/** Decision D7 and D8: every /v1 answer carries the rate-limit state and a request id. */
function assertV1Answer(res: Reply, status: number, code: string) {
  assert.equal(res.status, status, res.text)
  assert.equal((res.body as { code: string }).code, code, res.text)
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-request-id']) assert.ok(res.headers.has(name), `${name}: ${res.text}`)
}

for (const store of STORES) describe(`odd inputs (${store})`, () => {
  let server: TestServer
  let key: string
  before(async () => {
    server = await startTestServer({ store })
    key = await server.createKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 })
  })
  after(() => server.close())

  const post = (body: string | Uint8Array) =>
    server.request<Pet>('/v1/pets', { method: 'POST', key, body, headers: { 'content-type': 'application/json' } })

  it('a 300-digit petId goes through the /v1 steps: 401 without a key, 400 with one, with every /v1 header', async () => {
    const path = `/v1/pets/${'9'.repeat(300)}`
    assertV1Answer(await server.request(path), 401, 'unauthorized')
    const res = await server.request(path, { key })
    assertV1Answer(res, 400, 'invalid_parameter')
    assert.ok(res.headers.has('deprecation') && res.headers.has('sunset'), 'getPet answers carry its deprecation headers')
  })

  it('a path with malformed percent-encoding goes through the /v1 steps too', async () => {
    assertV1Answer(await server.request('/v1/pets/%zz'), 401, 'unauthorized')
    assertV1Answer(await server.request('/v1/pets/%zz', { key }), 400, 'invalid_parameter')
    assertV1Answer(await server.request('/v1/p%C3%28ets', { key }), 404, 'not_found')
  })

  it('GET /v1/pets/ (trailing slash) is an unknown route: 404, after the key check, without getPet headers', async () => {
    assertV1Answer(await server.request('/v1/pets/'), 401, 'unauthorized')
    const res = await server.request('/v1/pets/', { key })
    assertV1Answer(res, 404, 'not_found')
    assert.match((res.body as { message: string }).message, /GET \/v1\/pets\//)
    assert.equal(res.headers.get('deprecation'), null)
    assertV1Answer(await server.request('/v1/pets/', { key, method: 'POST', json: { name: 'Rex', categoryId: 1 } }), 404, 'not_found')
  })

  it('a name with U+0000 or a lone surrogate is a 400 invalid_field naming "name"', async () => {
    for (const name of ['Rex\u0000', '\u0000', '\ud800', 'Rex\udfff', '\udc00\ud800']) {
      const res = (await post(JSON.stringify({ name, categoryId: 1 }))) as unknown as ErrorReply
      assert.equal(res.status, 400, `${JSON.stringify(name)}: ${res.text}`)
      assert.equal(res.body.code, 'invalid_field')
      assert.match(res.body.message, /"name".*U\+0000/)
    }
  })

  it('a name with a control character or a bidirectional control is a 400 invalid_field naming "name": it could forge what a terminal or a page shows', async () => {
    // A tab, a newline, an escape sequence (erase the line, retitle the window), DEL, a C1 control, an override, an isolate.
    for (const name of ['Rex\tMax', 'Rex\n', 'ok\u001b[2K\rRex', 'Rex\u007f', 'Rex\u009b', '\u202estaC', 'Rex\u2066x\u2069', 'Rex\u2028Max']) {
      const res = (await post(JSON.stringify({ name, categoryId: 1 }))) as unknown as ErrorReply
      assert.equal(res.status, 400, `${JSON.stringify(name)}: ${res.text}`)
      assert.equal(res.body.code, 'invalid_field')
      assert.match(res.body.message, /"name" must be one line of valid Unicode without control characters .* or bidirectional controls/)
    }
  })

  it('a body that is not valid UTF-8 is a 400 invalid_body', async () => {
    const bytes = Buffer.concat([Buffer.from('{"name":"Re'), Buffer.from([0xff, 0xc3, 0x28]), Buffer.from('x","categoryId":1}')])
    const res = (await post(bytes)) as unknown as ErrorReply
    assert.equal(res.status, 400, res.text)
    assert.equal(res.body.code, 'invalid_body')
    assert.match(res.body.message, /UTF-8/)
  })

  it('stores what was sent, byte for byte: astral, combining, RTL and non-characters', async () => {
    for (const name of ['𝓡𝓮𝔁 🐕‍🦺', 'e\u0301\u0301', 'רקס Rex', '\uffff\ufffe', '\u00a0Rex\u3000', '"\\\u00a0']) {
      const created = await post(JSON.stringify({ name, categoryId: 1 }))
      assert.equal(created.status, 201, created.text)
      const read = await server.request<Pet>(`/v1/pets/${created.body.id}`, { key })
      assert.equal(Buffer.from(read.text).includes(Buffer.from(JSON.stringify(name))), true, read.text)
      assert.equal(read.body.name, name)
    }
  })

  it('an out-of-range limit or petId says the range, whatever its size or sign', async () => {
    for (const value of ['-1', '0', '101', '99999999999999999999', '-99999999999999999999']) {
      const res = (await server.request(`/v1/pets?limit=${value}`, { key })) as ErrorReply
      assert.equal(res.status, 400)
      assert.equal(res.body.message, 'parameter "limit" must be an integer from 1 to 100', value)
    }
    for (const value of ['-1', '0', '9007199254740992', '99999999999999999999']) {
      const res = (await server.request(`/v1/pets/${value}`, { key })) as ErrorReply
      assert.equal(res.status, 400)
      assert.equal(res.body.message, 'parameter "petId" must be an integer from 1 to 9007199254740991', value)
    }
  })

  it('a repeated query parameter gets one message, whatever its type', async () => {
    for (const query of ['limit=1&limit=2', 'status=sold&status=sold', 'cursor=a&cursor=b']) {
      const res = (await server.request(`/v1/pets?${query}`, { key })) as ErrorReply
      assert.equal(res.status, 400)
      const name = query.split('=')[0]
      assert.equal(res.body.message, `parameter "${name}" must be given once`, query)
    }
  })
})
