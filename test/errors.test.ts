// Every error of every layer answers the Error body with the right code, and a
// message that names what is wrong.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { parseRawAnswer, rawHttp } from './helpers/raw-http.js'
import { UNLIMITED } from './helpers/keys.js'
import { STORES, startTestServer, type Reply, type TestServer } from './helpers/server.js'

function assertError(res: Reply, status: number, code: string, mentions?: RegExp) {
  assert.equal(res.status, status, res.text)
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
  const body = res.body as { code: string; message: string; status: number }
  assert.equal(body.code, code, res.text)
  assert.equal(body.status, status)
  assert.equal(typeof body.message, 'string')
  assert.doesNotMatch(res.text, /\bat .+\.(ts|js):\d+/, 'no stack trace')
  if (mentions) assert.match(body.message, mentions)
}

for (const store of STORES) describe(`errors (${store})`, () => {
  let server: TestServer
  let key: string
  before(async () => {
    server = await startTestServer({ store })
    key = await server.createKey('enterprise', UNLIMITED)
  })
  after(() => server.close())

  const post = (body: string, contentType = 'application/json') =>
    server.request('/v1/pets', { method: 'POST', key, body, headers: { 'content-type': contentType } })

  describe('request bodies', () => {
    it('answers 415 unsupported_media_type when Content-Type is text/plain', async () => {
      assertError(await post('{"name":"Rex","categoryId":1}', 'text/plain'), 415, 'unsupported_media_type', /application\/json/)
    })

    it('answers 415 when there is no Content-Type', async () => {
      const res = await server.request('/v1/pets', { method: 'POST', key, body: new Uint8Array(Buffer.from('{}')) })
      assertError(res, 415, 'unsupported_media_type')
    })

    it('accepts application/json with a charset of UTF-8, and refuses any other 415 rather than misread it', async () => {
      for (const type of ['application/json; charset=utf-8', 'application/json;charset="UTF-8"', 'application/json; charset=utf8']) {
        assert.equal((await post('{"name":"Rex","categoryId":1}', type)).status, 201, type)
      }
      for (const charset of ['utf-16', 'latin1', 'iso-8859-1']) {
        assertError(await post('{"name":"Rex","categoryId":1}', `application/json; charset=${charset}`), 415, 'unsupported_media_type', new RegExp(`charset=${charset} is not accepted`))
      }
    })

    it('answers 400 invalid_body for malformed JSON', async () => {
      assertError(await post('{"name": "Rex",'), 400, 'invalid_body', /not valid JSON/)
    })

    it('answers 400 invalid_body for an empty body', async () => {
      assertError(await post(''), 400, 'invalid_body', /empty/)
    })

    it('answers 400 invalid_body when the body is not an object', async () => {
      for (const body of ['[]', '"Rex"', '42', 'null', 'true']) assertError(await post(body), 400, 'invalid_body', /JSON object/)
    })

    it('answers 413 payload_too_large above 64 KiB', async () => {
      const body = JSON.stringify({ name: 'x'.repeat(70 * 1024), categoryId: 1 })
      assertError(await post(body), 413, 'payload_too_large', /64 KiB/)
    })

    it('answers 400 invalid_body for deep nesting', async () => {
      assertError(await post('{"name":' + '['.repeat(1000) + ']'.repeat(1000) + '}'), 400, 'invalid_body', /nested/)
    })

    it('answers 400 invalid_body for __proto__ and constructor.prototype keys', async () => {
      assertError(await post('{"name":"Rex","categoryId":1,"__proto__":{"x":1}}'), 400, 'invalid_body', /__proto__/)
      assertError(await post('{"name":"Rex","categoryId":1,"constructor":{"prototype":{"x":1}}}'), 400, 'invalid_body', /prototype/)
    })
  })

  describe('body fields', () => {
    const cases: [string, unknown, RegExp][] = [
      ['missing name', { categoryId: 1 }, /missing required field "name"/],
      ['missing categoryId', { name: 'Rex' }, /missing required field "categoryId"/],
      ['a name that is a number', { name: 123, categoryId: 1 }, /"name" must be a string/],
      ['a categoryId that is a string', { name: 'Rex', categoryId: '7' }, /"categoryId" must be an integer/],
      ['a fractional categoryId', { name: 'Rex', categoryId: 1.5 }, /"categoryId" must be an integer/],
      ['a categoryId of 0', { name: 'Rex', categoryId: 0 }, /"categoryId" must be at least 1/],
      ['a categoryId above 2^53-1', { name: 'Rex', categoryId: 2 ** 53 }, /"categoryId" must be at most 9007199254740991/],
      ['an empty name', { name: '', categoryId: 1 }, /"name"/],
      ['a blank name', { name: '   \u3000', categoryId: 1 }, /"name" must not be blank/],
      ['a 201-character name', { name: 'x'.repeat(201), categoryId: 1 }, /"name" must be at most 200 characters/],
      ['an unknown status', { name: 'Rex', categoryId: 1, status: 'adopted' }, /"status" must be one of available, pending, sold/],
      ['a null status', { name: 'Rex', categoryId: 1, status: null }, /"status"/],
      ['an unknown field (a typo)', { name: 'Rex', categoryID: 1 }, /unknown field "categoryID"/],
      ['an id', { id: 5, name: 'Rex', categoryId: 1 }, /unknown field "id"/],
    ]
    for (const [what, body, message] of cases) {
      it(`answers 400 invalid_field for ${what}`, async () => {
        assertError(await post(JSON.stringify(body)), 400, 'invalid_field', message)
      })
    }

    it('says what is wrong with a list in words, not the validator\'s (an empty one, a repeated item)', async () => {
      const endpoint = (enabledEvents: unknown) => server.request('/v1/webhook-endpoints', { method: 'POST', key, json: { url: 'https://93.184.215.14/hook', enabledEvents } })
      assertError(await endpoint([]), 400, 'invalid_field', /^field "enabledEvents" must hold at least 1 item$/)
      assertError(await endpoint(['pet.created', 'order.placed', 'pet.created']), 400, 'invalid_field', /^field "enabledEvents" must not repeat an item \(items 3 and 1 are the same\)$/)
    })

    it('lists every problem in details, one per field', async () => {
      const res = await post(JSON.stringify({ name: 7, categoryID: 1, status: 'gone' }))
      assertError(res, 400, 'invalid_field')
      const fields = (res.body as { details: { field: string }[] }).details.map((d) => d.field).sort()
      assert.deepEqual(fields, ['categoryID', 'categoryId', 'name', 'status'])
    })

    it('creates nothing when the body is refused', async () => {
      const before = (await server.request<unknown[]>('/v1/pets?limit=100', { key })).body.length
      await post(JSON.stringify({ name: 'Ghost', categoryId: '1' }))
      const after = (await server.request<unknown[]>('/v1/pets?limit=100', { key })).body.length
      assert.equal(after, before)
    })
  })

  describe('query and path parameters', () => {
    const cases: [string, RegExp][] = [
      ['/v1/pets?limit=0', /"limit" must be an integer from 1 to 100/],
      ['/v1/pets?limit=101', /"limit" must be an integer from 1 to 100/],
      ['/v1/pets?limit=abc', /"limit" must be an integer/],
      ['/v1/pets?limit=1.5', /"limit" must be an integer/],
      ['/v1/pets?limit=1e1', /"limit" must be an integer/],
      ['/v1/pets?limit=0x10', /"limit" must be an integer/],
      ['/v1/pets?limit=', /"limit"/],
      ['/v1/pets?limit=5&limit=6', /"limit" must be given once/],
      ['/v1/pets?status=adopted', /"status" must be one of available, pending, sold/],
      ['/v1/pets?cursor=bogus', /"cursor"/],
      ['/v1/pets/abc', /"petId" must be an integer/],
      ['/v1/pets/0', /"petId" must be an integer from 1 to 9007199254740991/],
      ['/v1/pets/-1', /"petId"/],
      ['/v1/pets/1.5', /"petId"/],
      ['/v1/pets/9007199254740992', /"petId"/],
      ['/v1/pets/99999999999999999999', /"petId"/],
    ]
    for (const [path, message] of cases) {
      it(`answers 400 invalid_parameter for ${path}`, async () => {
        assertError(await server.request(path, { key }), 400, 'invalid_parameter', message)
      })
    }
  })

  describe('routes and methods', () => {
    it('answers 404 not_found for unknown routes, orders included (D10)', async () => {
      assertError(await server.request('/v1/orders', { key }), 404, 'not_found', /\/v1\/orders/)
      assertError(await server.request('/v1/orders/1', { key }), 404, 'not_found')
      assertError(await server.request('/nowhere'), 404, 'not_found')
    })

    it('answers 405 method_not_allowed with Allow for a known path', async () => {
      for (const method of ['DELETE', 'PUT', 'PATCH']) {
        const res = await server.request('/v1/pets', { method, key })
        assertError(res, 405, 'method_not_allowed')
        assert.equal(res.headers.get('allow'), 'GET, POST, HEAD')
      }
      const one = await server.request('/v1/pets/1', { method: 'POST', key })
      assertError(one, 405, 'method_not_allowed')
      assert.equal(one.headers.get('allow'), 'GET, PATCH, DELETE, HEAD')
      assert.equal((one.body as { message: string }).message, 'POST is not allowed on /v1/pets/1; it answers GET, PATCH, DELETE, HEAD.')
    })

    it('answers 501 not_implemented to a method no path has (PROPFIND, SEARCH, TRACE), known path or not', async () => {
      for (const [method, path] of [['PROPFIND', '/v1/pets'], ['SEARCH', '/v1/pets/1'], ['PROPFIND', '/nowhere']] as const) {
        const res = await server.request(path, { method, key })
        assertError(res, 501, 'not_implemented')
        assert.match((res.body as { message: string }).message, new RegExp(`does not implement ${method} on any path`))
      }
      // Fetch refuses to send TRACE; Fastify's router knows it, the service has no route for it.
      for (const path of ['/v1/pets', '/docs']) {
        const answer = parseRawAnswer(await rawHttp(server.url, `TRACE ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`))
        assert.equal(answer.status, 501, `TRACE ${path}`)
        assert.equal((answer.body as { code: string }).code, 'not_implemented')
      }
    })

    it('answers 400 for a path with broken percent-encoding', async () => {
      const res = await server.request('/v1/pets/%E0%A4%A', { key })
      assert.equal(res.status, 400)
      assert.equal((res.body as { status: number }).status, 400)
    })
  })

  describe('authentication runs before validation', () => {
    it('answers 401, not 400, for a bad body without a key', async () => {
      const res = await server.request('/v1/pets', { method: 'POST', body: 'nonsense', headers: { 'content-type': 'application/json' } })
      assertError(res, 401, 'unauthorized')
    })

    it('answers 401, not 404 or 405, without a key', async () => {
      assertError(await server.request('/v1/orders'), 401, 'unauthorized')
      assertError(await server.request('/v1/pets', { method: 'DELETE' }), 401, 'unauthorized')
    })
  })

  describe('malformed HTTP, refused by the parser before any route', () => {
    const BAD_REQUEST = { code: 'bad_request', message: 'The request is not valid HTTP/1.1.', status: 400 }
    const headers = () => `Host: x\r\nAuthorization: Bearer ${key}\r\n`

    for (const line of ['GET /v1/pets HTTP/1.1 extra', 'G(T /v1/pets HTTP/1.1', 'GET /v1/p ets HTTP/1.1', 'GET\t/v1/pets HTTP/1.1', 'GET /v1/pets HTTP/4.2']) {
      it(`answers 400 bad_request as an Error body to the request line ${JSON.stringify(line)}, and keeps serving`, async () => {
        const answer = parseRawAnswer(await rawHttp(server.url, `${line}\r\n${headers()}\r\n`))
        assert.equal(answer.status, 400)
        assert.deepEqual(answer.body, BAD_REQUEST)
        assert.equal((await server.request('/v1/pets', { key })).status, 200)
      })
    }

    it('answers 400 bad_request when the connection ends before the body its Content-Length announced, and keeps serving', async () => {
      const request = `POST /v1/pets HTTP/1.1\r\n${headers()}Content-Type: application/json\r\nContent-Length: 5\r\n\r\n{"a"`
      const answer = parseRawAnswer(await rawHttp(server.url, request))
      assert.equal(answer.status, 400)
      assert.deepEqual(answer.body, BAD_REQUEST)
      assert.equal((await server.request('/v1/pets', { key })).status, 200)
    })
  })
})
