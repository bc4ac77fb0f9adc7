// An operation that takes no body (the document gives it no requestBody: completeOrder,
// cancelOrder, revokeKey, unbanKey, redeliverEvent, the test event …, and every GET) refuses
// one before reading it, as GET does: 413 payload_too_large, decided on the headers
// before the key is checked, the connection closed. An empty body is not a body: many
// clients send Content-Type: application/json and Content-Length: 0 on every POST. The
// operations come from the served document, so one added later is covered.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SCOPES } from '../src/vocabulary/scopes.js'
import { UNLIMITED } from './helpers/keys.js'
import { exampleOf, fillPath, operationsOf, resolve, type Document } from './helpers/openapi-requests.js'
import { floodBodyInThread, parseRawAnswer, rawHttp } from './helpers/raw-http.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

for (const store of STORES) describe(`operations that take no body (${store})`, () => {
  let server: TestServer
  let key: string
  let document: Document
  before(async () => {
    server = await startTestServer({ store })
    key = await server.createKey('enterprise', UNLIMITED, { scopes: SCOPES })
    document = (await server.request<Document>('/v1/openapi.json')).body
  })
  after(() => server.close())

  const withoutBody = () => operationsOf(document).filter(({ operation }) => operation.requestBody === undefined)

  it('every one of them refuses a body 413 before the key is checked, closing the connection, and its 413 in the document says so', async () => {
    const posts = withoutBody().filter(({ method }) => method === 'post').map(({ operation }) => operation.operationId)
    for (const expected of ['completeOrder', 'cancelOrder', 'revokeKey', 'unbanKey', 'redeliverEvent', 'testWebhookEndpoint']) {
      assert.ok(posts.includes(expected), `${expected} is among the POST operations without a body: ${posts.join(', ')}`)
    }
    for (const { path, method, operation } of withoutBody()) {
      const target = `/v1${fillPath(path, {})}`
      const what = `${method.toUpperCase()} ${path}`
      // No key: the body is refused first, on the headers alone.
      const answer = await rawHttp(server.url, `${method.toUpperCase()} ${target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{"a": 1}\n`)
      const refused = parseRawAnswer(answer)
      assert.equal(refused.status, 413, `${what}: ${answer.slice(0, 300)}`)
      const body = refused.body as { code: string; message: string } | undefined
      if (method !== 'head') {
        assert.equal(body?.code, 'payload_too_large', what)
        assert.match(body!.message, /takes no request body; send none/, what)
      }
      assert.match(answer, /\r\nconnection: close\r\n/i, what)
      const documented = resolve(document, operation.responses['413']!)
      assert.match(documented.description!, /this operation takes none/, `${what}: its 413 in the document`)
    }
  })

  it('an empty body is not a body: Content-Length: 0, with or without Content-Type: application/json, is answered as none', async () => {
    const pet = await server.request<{ id: number }>('/v1/pets', { method: 'POST', key, json: { name: 'Bodiless', categoryId: 1 } })
    const placed = await server.request<{ id: number }>('/v1/store/orders', { method: 'POST', key, json: { petId: pet.body.id } })
    assert.equal(placed.status, 201, placed.text)
    const cancelled = await server.request(`/v1/store/orders/${placed.body.id}/cancel`, { method: 'POST', key, body: '', headers: { 'content-type': 'application/json' } })
    assert.equal(cancelled.status, 200, cancelled.text)
    const again = await server.request<{ id: number }>('/v1/store/orders', { method: 'POST', key, json: { petId: pet.body.id } })
    // fetch sends Content-Length: 0 and no Content-Type for a POST without a body.
    const completed = await server.request(`/v1/store/orders/${again.body.id}/complete`, { method: 'POST', key })
    assert.equal(completed.status, 200, completed.text)
    for (const { path, method, operation } of withoutBody().filter(({ method }) => method === 'post' || method === 'delete')) {
      const values = Object.fromEntries(
        (operation.parameters ?? []).filter((p) => p.in === 'path').map((p) => [p.name, String((p as { example?: unknown }).example ?? exampleOf(document, p.schema))]),
      )
      const res = await server.request<{ code: string }>(`/v1${fillPath(path, values)}`, { method: method.toUpperCase(), key, body: '', headers: { 'content-type': 'application/json' } })
      const what = `${method.toUpperCase()} ${path}: ${res.status} ${res.text}`
      assert.ok(res.status !== 413 && res.status !== 415, what)
      assert.notEqual(res.body.code, 'invalid_body', what)
    }
  })

  it('an operation whose body is optional (not required in the document) takes none, or an empty one, as {}', async () => {
    const optional = operationsOf(document).filter(({ operation }) => (operation.requestBody as { required?: boolean } | undefined)?.required === false)
    assert.deepEqual(optional.map(({ operation }) => operation.operationId).sort(), ['rollKey', 'rotateWebhookSecret'])
    // A key of its own: the tests above revoke the documented example key ids.
    const key = await server.createKey('enterprise', UNLIMITED, { scopes: SCOPES })
    const target = await server.request<{ apiKey: { id: number } }>('/v1/keys', { method: 'POST', key, json: { name: 'to roll' } })
    assert.equal(target.status, 201, target.text)
    const rolled = await server.request<{ apiKey: { id: number } }>(`/v1/keys/${target.body.apiKey.id}/roll`, { method: 'POST', key, body: '', headers: { 'content-type': 'application/json' } })
    assert.equal(rolled.status, 201, rolled.text)
    const bare = await server.request(`/v1/keys/${rolled.body.apiKey.id}/roll`, { method: 'POST', key })
    assert.equal(bare.status, 201, bare.text)
    for (const { path } of optional) {
      const target = `/v1${fillPath(path, { keyId: '999999', endpointId: '999999' })}`
      const res = await server.request<{ code: string }>(target, { method: 'POST', key, body: '', headers: { 'content-type': 'application/json' } })
      assert.equal(res.status, 404, `${path}: ${res.text}`)
      const nothing = await server.request<{ code: string }>(target, { method: 'POST', key, body: 'null', headers: { 'content-type': 'application/json' } })
      assert.equal(nothing.status, 400, `${path}: a JSON null is a body, and not an object: ${nothing.text}`)
      assert.equal(nothing.body.code, 'invalid_body', path)
    }
  })

  it('refuses a large chunked body on POST …/complete before reading it; the client reads the 413 whole', async () => {
    const { answer, error } = await floodBodyInThread(server.url, `POST /v1/store/orders/1/complete HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`, { chunks: 16 })
    const refused = parseRawAnswer(answer)
    assert.equal(refused.status, 413, `${error ?? ''} ${answer.slice(0, 300)}`)
    assert.equal((refused.body as { code: string }).code, 'payload_too_large')
    assert.match((refused.body as { message: string }).message, /takes no request body/, 'refused for being a body, not for its size')
  })
})
