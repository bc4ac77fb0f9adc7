// The OpenAPI document is generated from the schemas that validate requests; these
// tests check it says what the spec and decisions require, and that every status
// each operation declares is one the server really answers, with the declared body
// and headers.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Ajv } from 'ajv'
import { connect, type Socket } from 'node:net'
import { SCOPES } from '../src/vocabulary/scopes.js'
import { createManualClock } from '../src/clock.js'
import { answerClientError } from '../src/plugins/client-errors.js'
import { ERROR_CODES } from '../src/errors.js'
import { StoreUnavailableError } from '../src/db/store-errors.js'
import { fingerprint, fingerprintOf, IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_TTL_MS } from '../src/idempotency/idempotency-key.js'
import type { Order } from '../src/schemas/order.js'
import type { Pet } from '../src/schemas/pet.js'
import { DOCUMENT_FORMATS } from './helpers/openapi-requests.js'
import { V1_OPERATIONS } from './helpers/operations.js'
import { STORES, startTestServer, type Reply, type TestServer } from './helpers/server.js'

interface Parameter {
  name: string
  in: string
  required?: boolean
}
interface ResponseObject {
  $ref?: string
  description?: string
  headers?: Record<string, { required?: boolean }>
  content?: { 'application/json': { schema: object } }
}
interface Operation {
  operationId: string
  deprecated?: boolean
  parameters?: Parameter[]
  requestBody?: unknown
  responses: Record<string, ResponseObject>
}
type Document = {
  openapi: string
  info: { version: string; contact?: { name?: string; url?: string }; license?: { name: string; identifier?: string } }
  servers: { url: string }[]
  paths: Record<string, Record<string, Operation>>
  components: {
    securitySchemes: Record<string, { type: string; scheme: string }>
    schemas: Record<string, { properties: Record<string, { enum?: string[] }> }>
    responses?: Record<string, ResponseObject>
  }
  security: Record<string, string[]>[]
}

for (const store of STORES) describe(`the OpenAPI document (${store})`, () => {
  const clock = createManualClock('2026-11-22T12:00:00Z')
  let server: TestServer
  let doc: Document
  let key: string
  let admin: string
  let pet: Pet
  before(async () => {
    server = await startTestServer({ store, clock })
    // Every scope: the answers every operation gives (400, 413, 415…) come after the scope check.
    key = await server.createKey('enterprise', { perMinute: 10_000, perDay: 100_000 }, { scopes: SCOPES })
    admin = key
    pet = (await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: 'Doc', categoryId: 1 } })).body
    await server.request('/v1/pets', { method: 'POST', key, json: { name: 'Doc 2', categoryId: 1 } })
    doc = (await server.request<Document>('/v1/openapi.json')).body
  })
  after(() => server.close())

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })))
  /** A response object, its `$ref` to components.responses followed. */
  const resolve = (response: ResponseObject): ResponseObject =>
    response.$ref ? doc.components.responses![response.$ref.replace('#/components/responses/', '')]! : response

  it('is public OpenAPI 3.1 at version 1.0.0', async () => {
    assert.match(doc.openapi, /^3\.1\./)
    assert.equal(doc.info.version, '1.0.0')
  })

  it('lists production and staging servers, both ending in /v1', () => {
    assert.deepEqual(
      doc.servers.map((s) => s.url),
      [server.config.publicUrl, server.config.stagingUrl],
    )
    for (const s of doc.servers) assert.match(s.url, /\/v1$/)
  })

  it('has exactly the operations of the table in test/helpers/operations.ts', () => {
    const ops = operations().map(({ path, method, op }) => `${method.toUpperCase()} ${path} ${op.operationId}${op.deprecated ? ' deprecated' : ''}`)
    const expected = V1_OPERATIONS.map((o) => `${o.method} ${o.path.slice('/v1'.length)} ${o.operationId}${o.deprecated ? ' deprecated' : ''}`)
    assert.deepEqual(ops.sort(), expected.sort())
  })

  it('requires a bearer key for every operation', () => {
    const schemes = Object.values(doc.components.securitySchemes)
    assert.deepEqual(schemes.map((s) => [s.type, s.scheme]), [['http', 'bearer']])
    assert.equal(doc.security.length, 1)
  })

  it('names a contact and a license (Spectral and Redocly ask for both)', () => {
    assert.match(doc.info.contact?.url ?? '', /^https:\/\/.+\/docs$/)
    assert.deepEqual(doc.info.license, { name: 'MIT', identifier: 'MIT' })
  })

  it('documents a parameter with a default as optional: limit is not required', () => {
    const listPets = doc.paths['/pets']!.get!
    const limit = listPets.parameters!.find((p) => p.name === 'limit')!
    assert.equal(limit.required, false)
    for (const { op } of operations()) {
      for (const parameter of op.parameters ?? []) {
        if (parameter.in === 'query') assert.notEqual(parameter.required, true, `${op.operationId} ${parameter.name}: query parameters are optional`)
      }
    }
  })

  it('marks the rate-limit headers required on every answer that passed the limiter', () => {
    for (const { op } of operations()) {
      for (const [status, declared] of Object.entries(op.responses)) {
        const response = resolve(declared)
        // 408 and 431 are answered on the connection before routing; 500 and 503 may come from
        // the limiter itself; a body on GET is refused before the key is looked at.
        const counted = !['408', '431', '500', '503'].includes(status) && !(status === '413' && declared.$ref === '#/components/responses/BodyNotTaken')
        for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
          if (counted) assert.equal(response.headers?.[name]?.required, true, `${op.operationId} ${status} ${name}`)
        }
        if (status !== '408' && status !== '431') assert.equal(response.headers?.['X-Request-Id']?.required, true, `${op.operationId} ${status} X-Request-Id`)
      }
    }
  })

  it("keeps an operation's own 403 (forbidden) beside the scope's (insufficient_scope), with WWW-Authenticate only for the latter", () => {
    for (const { op } of operations()) {
      const forbidden = op.responses['403'] && resolve(op.responses['403'])
      if (!forbidden) continue
      assert.equal(forbidden.description?.match(/`insufficient_scope`/g)?.length, 1, `${op.operationId} 403: ${forbidden.description}`)
      // Optional only beside a 403 of the operation's own, which sends none.
      assert.equal(forbidden.headers?.['WWW-Authenticate']?.required, /`forbidden`/.test(forbidden.description ?? '') ? false : true, `${op.operationId} 403 WWW-Authenticate`)
    }
    for (const operationId of ['createKey', 'rollKey', 'updateKey']) {
      const found = operations().find(({ op }) => op.operationId === operationId)!
      const forbidden = resolve(found.op.responses['403']!)
      assert.match(forbidden.description ?? '', /`forbidden`/, operationId)
      assert.equal(forbidden.headers?.['WWW-Authenticate']?.required, false, operationId)
    }
  })

  it('lists every error code in the Error schema', () => {
    assert.deepEqual(doc.components.schemas.Error!.properties.code!.enum, ERROR_CODES)
  })

  // One request per declared (operation, status). A status declared without a way
  // to produce it here fails the test, and so does one produced but not declared.
  /** A request made with a key that has just used up its one request a minute. */
  async function overLimit(path: string, init: RequestInit & { json?: unknown } = {}) {
    const tiny = await server.createKey('enterprise', { perMinute: 1, perDay: 10 })
    await server.request('/v1/pets', { key: tiny })
    return server.request(path, { ...init, key: tiny })
  }

  /** A request to the operation, as sent by a client that knows only the document. */
  type Target = { path: string; method: string; takesBody: boolean }
  const concrete = ({ path }: Target) => `/v1${path.replace(/\{[^}]+\}/g, String(pet.id))}`
  const bodyFor = (target: Target) => (target.takesBody ? JSON.stringify({ name: 'Common', categoryId: 3 }) : undefined)

  /** With the key store failing: a fresh key must be looked up, so the first step of /v1 fails. */
  async function withFailingKeyStore(target: Target, failure: Error): Promise<Reply> {
    const fresh = await server.createKey('enterprise', { perMinute: 100, perDay: 1000 })
    const { findByHash } = server.store.apiKeys
    server.store.apiKeys.findByHash = async () => {
      throw failure
    }
    try {
      const body = bodyFor(target)
      return await server.request(concrete(target), { method: target.method.toUpperCase(), key: fresh, body, headers: body ? { 'content-type': 'application/json' } : {} })
    } finally {
      server.store.apiKeys.findByHash = findByHash
    }
  }

  /** The answers every operation can give (openapi-responses.ts), produced for any operation. */
  const common: Record<string, (target: Target) => Promise<Reply>> = {
    408: async () => {
      // Node checks request timeouts every 30 s: the answer itself is what clientErrorHandler writes.
      let written = ''
      const socket = { writable: true, end: (text: string) => (written = text), destroy: () => {} } as unknown as Socket
      answerClientError(Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket)
      return parseRaw(written)
    },
    431: async (target) => parseRaw(await rawRequest(`${target.method.toUpperCase()} ${concrete(target)} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)),
    500: (target) => withFailingKeyStore(target, new Error('a bug')),
    // What the store throws when the database cannot be reached (db/store-errors.ts).
    503: (target) => withFailingKeyStore(target, new StoreUnavailableError('the connection was lost')),
    // An operation without a requestBody refuses any body (fetch cannot send one on GET, a raw request can).
    413: async (target) =>
      target.takesBody
        ? server.request(concrete(target), { method: target.method.toUpperCase(), key, body: JSON.stringify({ name: 'x'.repeat(70_000) }), headers: { 'content-type': 'application/json' } })
        : parseRaw(await rawRequest(`${target.method.toUpperCase()} ${concrete(target)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: 5\r\n\r\nhello`)),
    // Another Content-Type: with a body where one is taken, with an empty one elsewhere.
    415: (target) => server.request(concrete(target), { method: target.method.toUpperCase(), key, body: target.takesBody ? 'name=Rex' : '', headers: { 'content-type': 'text/plain' } }),
    // A malformed body where one is taken; elsewhere a query parameter the operation does not define.
    400: (target) =>
      target.takesBody
        ? server.request(concrete(target), { method: target.method.toUpperCase(), key, body: '{', headers: { 'content-type': 'application/json' } })
        : server.request(`${concrete(target)}${concrete(target).includes('?') ? '&' : '?'}unknownParameter=1`, { method: target.method.toUpperCase(), key }),
  }

  function rawRequest(bytes: string): Promise<string> {
    const { port } = new URL(server.url)
    return new Promise((resolve, reject) => {
      let text = ''
      const socket = connect(Number(port), '127.0.0.1', () => socket.write(bytes))
      socket.on('data', (chunk) => (text += chunk.toString()))
      socket.on('end', () => resolve(text))
      socket.on('error', reject)
    })
  }

  function parseRaw(text: string): Reply {
    const [head = '', body = ''] = text.split('\r\n\r\n')
    const [statusLine = '', ...lines] = head.split('\r\n')
    const headers = new Headers(lines.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()] as [string, string]))
    return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) as unknown, text }
  }

  /** A request with a key holding no scope: 403 on every operation that needs one. */
  async function withoutScope(path: string, init: RequestInit & { json?: unknown } = {}) {
    const bare = await server.createKey('pro', {}, { scopes: [] })
    return server.request(path, { ...init, key: bare })
  }
  const newKeyId = async () => (await server.request<{ apiKey: { id: number } }>('/v1/keys', { method: 'POST', key: admin, json: {} })).body.apiKey.id
  /** The scenarios of an operation on /v1/keys/{keyId}…: 200 (or `ok`), 400, 401, 404, 429. */
  const keyScenarios = (method: string, suffix: string, ok = '200', json?: unknown) => ({
    [ok]: async () => server.request(`/v1/keys/${await newKeyId()}${suffix}`, { method, key: admin, json }),
    400: () => server.request(`/v1/keys/zero${suffix}`, { method, key: admin, json }),
    401: () => server.request(`/v1/keys/1${suffix}`, { method, json }),
    404: () => server.request(`/v1/keys/987654321${suffix}`, { method, key: admin, json }),
    429: () => overLimit(`/v1/keys/1${suffix}`, { method, json }),
  })

  const ENDPOINT = { url: 'https://93.184.215.14/hook', enabledEvents: ['pet.created'] }
  const newEndpointId = async () => (await server.request<{ id: number }>('/v1/webhook-endpoints', { method: 'POST', key, json: ENDPOINT })).body.id
  /** The scenarios of an operation on /v1/webhook-endpoints/{endpointId}…: 200 (or `ok`), 400, 401, 403, 404, 429. */
  const endpointScenarios = (method: string, suffix: string, ok = '200', json?: unknown) => ({
    [ok]: async () => server.request(`/v1/webhook-endpoints/${await newEndpointId()}${suffix}`, { method, key, json }),
    400: () => server.request(`/v1/webhook-endpoints/zero${suffix}`, { method, key, json }),
    401: () => server.request(`/v1/webhook-endpoints/1${suffix}`, { method, json }),
    403: () => withoutScope(`/v1/webhook-endpoints/1${suffix}`, { method, json }),
    404: () => server.request(`/v1/webhook-endpoints/987654321${suffix}`, { method, key, json }),
    429: () => overLimit(`/v1/webhook-endpoints/1${suffix}`, { method, json }),
  })

  /** A fresh available pet, and an order placed for one. */
  const newPetId = async () => (await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: 'Adoptable', categoryId: 1 } })).body.id
  const newOrder = async () => (await server.request<Order>('/v1/store/orders', { method: 'POST', key, json: { petId: await newPetId() } })).body
  const closeScenarios = (action: 'complete' | 'cancel') => ({
    200: async () => server.request(`/v1/store/orders/${(await newOrder()).id}/${action}`, { method: 'POST', key }),
    400: () => server.request(`/v1/store/orders/zero/${action}`, { method: 'POST', key }),
    401: () => server.request(`/v1/store/orders/1/${action}`, { method: 'POST' }),
    404: () => server.request(`/v1/store/orders/987654321/${action}`, { method: 'POST', key }),
    409: async () => {
      const order = await newOrder()
      await server.request(`/v1/store/orders/${order.id}/complete`, { method: 'POST', key })
      return server.request(`/v1/store/orders/${order.id}/${action}`, { method: 'POST', key })
    },
    429: () => overLimit(`/v1/store/orders/1/${action}`, { method: 'POST' }),
  })

  /** Categories made by scenarios, for distinct names. */
  let categories = 0
  const scenarios: Record<string, Record<string, () => Promise<Reply>>> = {
    placeOrder: {
      403: () => withoutScope('/v1/store/orders', { method: 'POST', json: { petId: 1 } }),
      201: async () => server.request('/v1/store/orders', { method: 'POST', key, json: { petId: await newPetId() } }),
      400: () => server.request('/v1/store/orders', { method: 'POST', key, json: {} }),
      401: () => server.request('/v1/store/orders', { method: 'POST', json: { petId: 1 } }),
      404: () => server.request('/v1/store/orders', { method: 'POST', key, json: { petId: 987654321 } }),
      409: async () => {
        // The first request with this key is still running (the declared Retry-After comes with idempotency_key_in_use).
        const petId = await newPetId()
        const options = { fingerprint: fingerprintOf('placeOrder', { petId }), now: clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS }
        await server.store.idempotency.claim({ accountId: await server.accountId(key), key: 'scenario-order-409' }, options)
        return server.request('/v1/store/orders', { method: 'POST', key, json: { petId }, headers: { 'idempotency-key': 'scenario-order-409' } })
      },
      413: () => server.request('/v1/store/orders', { method: 'POST', key, json: { petId: 1, pad: 'x'.repeat(70_000) } }),
      415: () => server.request('/v1/store/orders', { method: 'POST', key, body: 'petId=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      422: async () => {
        const headers = { 'idempotency-key': 'scenario-order-422' }
        await server.request('/v1/store/orders', { method: 'POST', key, json: { petId: await newPetId() }, headers })
        return server.request('/v1/store/orders', { method: 'POST', key, json: { petId: await newPetId() }, headers })
      },
      429: () => overLimit('/v1/store/orders', { method: 'POST', json: { petId: 1 } }),
    },
    listOrders: {
      403: () => withoutScope('/v1/store/orders'),
      200: () => server.request('/v1/store/orders?limit=1', { key }),
      400: () => server.request('/v1/store/orders?status=lost', { key }),
      401: () => server.request('/v1/store/orders'),
      429: () => overLimit('/v1/store/orders'),
    },
    getOrder: {
      403: () => withoutScope('/v1/store/orders/1'),
      200: async () => server.request(`/v1/store/orders/${(await newOrder()).id}`, { key }),
      400: () => server.request('/v1/store/orders/zero', { key }),
      401: () => server.request('/v1/store/orders/1'),
      404: () => server.request('/v1/store/orders/987654321', { key }),
      429: () => overLimit('/v1/store/orders/1'),
    },
    completeOrder: { ...closeScenarios('complete'), 403: () => withoutScope('/v1/store/orders/1/complete', { method: 'POST' }) },
    cancelOrder: { ...closeScenarios('cancel'), 403: () => withoutScope('/v1/store/orders/1/cancel', { method: 'POST' }) },
    getInventory: {
      403: () => withoutScope('/v1/store/inventory'),
      200: () => server.request('/v1/store/inventory', { key }),
      401: () => server.request('/v1/store/inventory'),
      429: () => overLimit('/v1/store/inventory'),
    },
    listCategories: {
      403: () => withoutScope('/v1/categories'),
      200: () => server.request('/v1/categories?limit=1', { key }),
      400: () => server.request('/v1/categories?limit=0', { key }),
      401: () => server.request('/v1/categories'),
      429: () => overLimit('/v1/categories'),
    },
    createCategory: {
      403: () => withoutScope('/v1/categories', { method: 'POST', json: { name: 'Scenario' } }),
      201: () => server.request('/v1/categories', { method: 'POST', key, json: { name: `Scenario ${++categories}` } }),
      400: () => server.request('/v1/categories', { method: 'POST', key, json: {} }),
      401: () => server.request('/v1/categories', { method: 'POST', json: { name: 'Scenario' } }),
      409: () => server.request('/v1/categories', { method: 'POST', key, json: { name: 'dogs' } }),
      413: () => server.request('/v1/categories', { method: 'POST', key, json: { name: 'x'.repeat(70_000) } }),
      415: () => server.request('/v1/categories', { method: 'POST', key, body: 'name=Rex', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      422: async () => {
        const headers = { 'idempotency-key': 'scenario-category-422' }
        await server.request('/v1/categories', { method: 'POST', key, json: { name: 'Scenario first' }, headers })
        return server.request('/v1/categories', { method: 'POST', key, json: { name: 'Scenario other' }, headers })
      },
      429: () => overLimit('/v1/categories', { method: 'POST', json: { name: 'Scenario' } }),
    },
    getCategory: {
      403: () => withoutScope('/v1/categories/1'),
      200: () => server.request('/v1/categories/1', { key }),
      400: () => server.request('/v1/categories/zero', { key }),
      401: () => server.request('/v1/categories/1'),
      404: () => server.request('/v1/categories/987654321', { key }),
      429: () => overLimit('/v1/categories/1'),
    },
    updateCategory: {
      403: () => withoutScope('/v1/categories/1', { method: 'PATCH', json: { description: 'x' } }),
      200: () => server.request('/v1/categories/7', { method: 'PATCH', key, json: { description: 'Anything else' } }),
      400: () => server.request('/v1/categories/1', { method: 'PATCH', key, json: {} }),
      401: () => server.request('/v1/categories/1', { method: 'PATCH', json: { description: 'x' } }),
      404: () => server.request('/v1/categories/987654321', { method: 'PATCH', key, json: { description: 'x' } }),
      409: () => server.request('/v1/categories/1', { method: 'PATCH', key, json: { name: 'CATS' } }),
      413: () => server.request('/v1/categories/1', { method: 'PATCH', key, json: { name: 'x'.repeat(70_000) } }),
      415: () => server.request('/v1/categories/1', { method: 'PATCH', key, body: 'name=Rex', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      429: () => overLimit('/v1/categories/1', { method: 'PATCH', json: { description: 'x' } }),
    },
    deleteCategory: {
      403: () => withoutScope('/v1/categories/1', { method: 'DELETE' }),
      204: async () => {
        const made = await server.request<{ id: number }>('/v1/categories', { method: 'POST', key, json: { name: `Scenario ${++categories}` } })
        return server.request(`/v1/categories/${made.body.id}`, { method: 'DELETE', key })
      },
      400: () => server.request('/v1/categories/zero', { method: 'DELETE', key }),
      401: () => server.request('/v1/categories/1', { method: 'DELETE' }),
      404: () => server.request('/v1/categories/987654321', { method: 'DELETE', key }),
      409: async () => {
        await newPetId() // a pet of category 1
        return server.request('/v1/categories/1', { method: 'DELETE', key })
      },
      429: () => overLimit('/v1/categories/1', { method: 'DELETE' }),
    },
    listPets: {
      403: () => withoutScope('/v1/pets'),
      200: () => server.request('/v1/pets?limit=1', { key }),
      400: () => server.request('/v1/pets?limit=0', { key }),
      401: () => server.request('/v1/pets'),
      429: () => overLimit('/v1/pets'),
    },
    createPet: {
      403: () => withoutScope('/v1/pets', { method: 'POST', json: { name: 'Scenario', categoryId: 2 } }),
      201: () => server.request('/v1/pets', { method: 'POST', key, json: { name: 'Scenario', categoryId: 2 } }),
      400: () => server.request('/v1/pets', { method: 'POST', key, json: { name: 'Scenario' } }),
      401: () => server.request('/v1/pets', { method: 'POST', json: { name: 'Scenario', categoryId: 2 } }),
      413: () => server.request('/v1/pets', { method: 'POST', key, json: { name: 'x'.repeat(70_000), categoryId: 2 } }),
      415: () => server.request('/v1/pets', { method: 'POST', key, body: 'name=Rex', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      409: async () => {
        // The first request with this key is still running: its claim is in the store.
        const json = { name: 'In flight', categoryId: 2 }
        const options = { fingerprint: fingerprint(json), now: clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS }
        await server.store.idempotency.claim({ accountId: await server.accountId(key), key: 'scenario-409' }, options)
        return server.request('/v1/pets', { method: 'POST', key, json, headers: { 'idempotency-key': 'scenario-409' } })
      },
      422: async () => {
        const headers = { 'idempotency-key': 'scenario-422' }
        await server.request('/v1/pets', { method: 'POST', key, json: { name: 'First', categoryId: 2 }, headers })
        return server.request('/v1/pets', { method: 'POST', key, json: { name: 'Other', categoryId: 2 }, headers })
      },
      429: () => overLimit('/v1/pets', { method: 'POST', json: { name: 'Scenario', categoryId: 2 } }),
    },
    updatePet: {
      403: () => withoutScope(`/v1/pets/${pet.id}`, { method: 'PATCH', json: { name: 'Patched' } }),
      200: async () => server.request(`/v1/pets/${await newPetId()}`, { method: 'PATCH', key, json: { name: 'Patched' } }),
      400: () => server.request(`/v1/pets/${pet.id}`, { method: 'PATCH', key, json: {} }),
      401: () => server.request(`/v1/pets/${pet.id}`, { method: 'PATCH', json: { name: 'Patched' } }),
      404: () => server.request('/v1/pets/987654321', { method: 'PATCH', key, json: { name: 'Patched' } }),
      409: async () => server.request(`/v1/pets/${(await newOrder()).petId}`, { method: 'PATCH', key, json: { status: 'available' } }),
      412: async () => server.request(`/v1/pets/${await newPetId()}`, { method: 'PATCH', key, json: { name: 'Patched' }, headers: { 'if-match': '"stale"' } }),
      413: () => server.request(`/v1/pets/${pet.id}`, { method: 'PATCH', key, json: { name: 'x'.repeat(70_000) } }),
      415: () => server.request(`/v1/pets/${pet.id}`, { method: 'PATCH', key, body: 'name=Rex', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      429: () => overLimit(`/v1/pets/${pet.id}`, { method: 'PATCH', json: { name: 'Patched' } }),
    },
    deletePet: {
      403: () => withoutScope(`/v1/pets/${pet.id}`, { method: 'DELETE' }),
      204: async () => server.request(`/v1/pets/${await newPetId()}`, { method: 'DELETE', key }),
      400: () => server.request('/v1/pets/zero', { method: 'DELETE', key }),
      401: () => server.request(`/v1/pets/${pet.id}`, { method: 'DELETE' }),
      404: () => server.request('/v1/pets/987654321', { method: 'DELETE', key }),
      409: async () => server.request(`/v1/pets/${(await newOrder()).petId}`, { method: 'DELETE', key }),
      412: async () => server.request(`/v1/pets/${await newPetId()}`, { method: 'DELETE', key, headers: { 'if-match': '"stale"' } }),
      429: () => overLimit(`/v1/pets/${pet.id}`, { method: 'DELETE' }),
    },
    createKey: {
      201: () => server.request('/v1/keys', { method: 'POST', key: admin, json: { scopes: ['pets:read'] } }),
      400: () => server.request('/v1/keys', { method: 'POST', key: admin, json: { plan: 'gold' } }),
      401: () => server.request('/v1/keys', { method: 'POST', json: {} }),
      403: () => withoutScope('/v1/keys', { method: 'POST', json: {} }),
      409: async () => {
        const json = {}
        // As routes/v1/keys.ts makes it: the body and the calling key.
        const options = { fingerprint: fingerprintOf('createKey', { ...json, by: await server.keyId(admin) }), now: clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS }
        await server.store.idempotency.claim({ accountId: await server.accountId(admin), key: 'scenario-key-409' }, options)
        return server.request('/v1/keys', { method: 'POST', key: admin, json, headers: { 'idempotency-key': 'scenario-key-409' } })
      },
      413: () => server.request('/v1/keys', { method: 'POST', key: admin, json: { name: 'x'.repeat(70_000) } }),
      415: () => server.request('/v1/keys', { method: 'POST', key: admin, body: 'plan=free', headers: { 'content-type': 'text/plain' } }),
      422: async () => {
        const headers = { 'idempotency-key': 'scenario-key-422' }
        await server.request('/v1/keys', { method: 'POST', key: admin, json: { name: 'first' }, headers })
        return server.request('/v1/keys', { method: 'POST', key: admin, json: { name: 'other' }, headers })
      },
      429: () => overLimit('/v1/keys', { method: 'POST', json: {} }),
    },
    listKeys: {
      200: () => server.request('/v1/keys?limit=1', { key: admin }),
      400: () => server.request('/v1/keys?limit=0', { key: admin }),
      401: () => server.request('/v1/keys'),
      403: () => withoutScope('/v1/keys'),
      429: () => overLimit('/v1/keys'),
    },
    getKey: { ...keyScenarios('GET', ''), 403: () => withoutScope('/v1/keys/1') },
    updateKey: {
      ...keyScenarios('PATCH', '', '200', { name: 'Renamed' }),
      400: () => server.request('/v1/keys/1', { method: 'PATCH', key: admin, json: {} }),
      403: () => withoutScope('/v1/keys/1', { method: 'PATCH', json: { name: 'Renamed' } }),
      413: () => server.request('/v1/keys/1', { method: 'PATCH', key: admin, json: { name: 'x'.repeat(70_000) } }),
      415: () => server.request('/v1/keys/1', { method: 'PATCH', key: admin, body: 'name=x', headers: { 'content-type': 'text/plain' } }),
      409: async () => {
        const id = await newKeyId()
        await server.request(`/v1/keys/${id}/revoke`, { method: 'POST', key: admin })
        return server.request(`/v1/keys/${id}`, { method: 'PATCH', key: admin, json: { name: 'Revoked' } })
      },
    },
    rollKey: {
      ...keyScenarios('POST', '/roll', '201'),
      403: () => withoutScope('/v1/keys/1/roll', { method: 'POST' }),
      409: async () => {
        const id = await newKeyId()
        await server.request(`/v1/keys/${id}/roll`, { method: 'POST', key: admin })
        return server.request(`/v1/keys/${id}/roll`, { method: 'POST', key: admin })
      },
      415: () => server.request('/v1/keys/1/roll', { method: 'POST', key: admin, body: 'grace=0', headers: { 'content-type': 'text/plain' } }),
    },
    revokeKey: { ...keyScenarios('POST', '/revoke'), 403: () => withoutScope('/v1/keys/1/revoke', { method: 'POST' }) },
    unbanKey: { ...keyScenarios('POST', '/unban'), 403: () => withoutScope('/v1/keys/1/unban', { method: 'POST' }) },
    getKeyUsage: { ...keyScenarios('GET', '/usage'), 403: () => withoutScope('/v1/keys/1/usage') },
    getUsage: {
      200: () => server.request('/v1/usage', { key }),
      401: () => server.request('/v1/usage'),
      // Not counted, so never limited for a valid key: a caller without one is, as anywhere.
      // (In a minute of its own: the other scenarios' requests without a key must not find it used up.)
      429: async () => {
        clock.set('2026-11-22T12:01:00Z')
        try {
          for (let i = 0; i < 200; i++) {
            const res = await server.request('/v1/usage', { key: 'ps_test_nope' })
            if (res.status === 429) return res
          }
          throw new Error('no 429 for a caller without a valid key')
        } finally {
          clock.set('2026-11-22T12:00:00Z')
        }
      },
    },
    getAccount: {
      200: () => server.request('/v1/account', { key }),
      401: () => server.request('/v1/account'),
      429: () => overLimit('/v1/account'),
    },
    getUsageHistory: {
      200: () => server.request('/v1/usage/history?granularity=day', { key }),
      404: () => server.request('/v1/usage/history?keyId=987654321', { key }),
      400: () => server.request('/v1/usage/history?from=yesterday', { key }),
      401: () => server.request('/v1/usage/history'),
      403: () => withoutScope('/v1/usage/history'),
      429: () => overLimit('/v1/usage/history'),
    },
    listEvents: {
      200: () => server.request('/v1/events?limit=2', { key }),
      400: () => server.request('/v1/events?type=pet.eaten', { key }),
      401: () => server.request('/v1/events'),
      403: () => withoutScope('/v1/events'),
      429: () => overLimit('/v1/events'),
    },
    redeliverEvent: {
      202: async () => {
        await newEndpointId()
        const [event] = (await server.request<{ id: string }[]>('/v1/events?limit=1', { key })).body
        return server.request(`/v1/events/${event!.id}/redeliver`, { method: 'POST', key })
      },
      400: () => server.request('/v1/events/1/redeliver', { method: 'POST', key }),
      401: () => server.request('/v1/events/evt_1/redeliver', { method: 'POST' }),
      403: () => withoutScope('/v1/events/evt_1/redeliver', { method: 'POST' }),
      404: () => server.request('/v1/events/evt_987654321/redeliver', { method: 'POST', key }),
      429: () => overLimit('/v1/events/evt_1/redeliver', { method: 'POST' }),
    },
    createWebhookEndpoint: {
      201: () => server.request('/v1/webhook-endpoints', { method: 'POST', key, json: ENDPOINT }),
      400: () => server.request('/v1/webhook-endpoints', { method: 'POST', key, json: { ...ENDPOINT, url: 'http://127.0.0.1/hook' } }),
      401: () => server.request('/v1/webhook-endpoints', { method: 'POST', json: ENDPOINT }),
      403: () => withoutScope('/v1/webhook-endpoints', { method: 'POST', json: ENDPOINT }),
      409: async () => {
        // An account of its own, filled to the default limit of 16.
        const full = await server.createKey('enterprise', { perMinute: 10_000, perDay: 100_000 }, { scopes: SCOPES })
        for (let i = 0; i < 16; i++) await server.request('/v1/webhook-endpoints', { method: 'POST', key: full, json: ENDPOINT })
        return server.request('/v1/webhook-endpoints', { method: 'POST', key: full, json: ENDPOINT })
      },
      413: () => server.request('/v1/webhook-endpoints', { method: 'POST', key, json: { ...ENDPOINT, description: 'x'.repeat(70_000) } }),
      415: () => server.request('/v1/webhook-endpoints', { method: 'POST', key, body: 'url=x', headers: { 'content-type': 'text/plain' } }),
      422: async () => {
        const headers = { 'idempotency-key': 'scenario-endpoint-422' }
        await server.request('/v1/webhook-endpoints', { method: 'POST', key, json: ENDPOINT, headers })
        return server.request('/v1/webhook-endpoints', { method: 'POST', key, json: { ...ENDPOINT, description: 'another' }, headers })
      },
      429: () => overLimit('/v1/webhook-endpoints', { method: 'POST', json: ENDPOINT }),
    },
    listWebhookEndpoints: {
      200: () => server.request('/v1/webhook-endpoints', { key }),
      401: () => server.request('/v1/webhook-endpoints'),
      403: () => withoutScope('/v1/webhook-endpoints'),
      429: () => overLimit('/v1/webhook-endpoints'),
    },
    getWebhookEndpoint: endpointScenarios('GET', ''),
    updateWebhookEndpoint: {
      ...endpointScenarios('PATCH', '', '200', { description: 'Changed' }),
      400: async () => server.request(`/v1/webhook-endpoints/${await newEndpointId()}`, { method: 'PATCH', key, json: {} }),
      413: () => server.request('/v1/webhook-endpoints/1', { method: 'PATCH', key, json: { description: 'x'.repeat(70_000) } }),
      415: () => server.request('/v1/webhook-endpoints/1', { method: 'PATCH', key, body: 'x', headers: { 'content-type': 'text/plain' } }),
    },
    deleteWebhookEndpoint: endpointScenarios('DELETE', '', '204'),
    rotateWebhookSecret: {
      ...endpointScenarios('POST', '/rotate-secret'),
      400: async () => server.request(`/v1/webhook-endpoints/${await newEndpointId()}/rotate-secret`, { method: 'POST', key, json: { grace: -1 } }),
      415: () => server.request('/v1/webhook-endpoints/1/rotate-secret', { method: 'POST', key, body: 'x', headers: { 'content-type': 'text/plain' } }),
    },
    testWebhookEndpoint: {
      ...endpointScenarios('POST', '/test', '202'),
      409: async () => {
        const id = await newEndpointId()
        await server.request(`/v1/webhook-endpoints/${id}`, { method: 'PATCH', key, json: { enabled: false } })
        return server.request(`/v1/webhook-endpoints/${id}/test`, { method: 'POST', key })
      },
    },
    listWebhookDeliveries: endpointScenarios('GET', '/deliveries'),
    getPet: {
      403: () => withoutScope(`/v1/pets/${pet.id}`),
      200: () => server.request(`/v1/pets/${pet.id}`, { key }),
      400: () => server.request('/v1/pets/zero', { key }),
      401: () => server.request(`/v1/pets/${pet.id}`),
      404: () => server.request('/v1/pets/987654321', { key }),
      429: () => overLimit(`/v1/pets/${pet.id}`),
      410: async () => {
        clock.set('2031-01-01T00:00:00Z')
        try {
          return await server.request(`/v1/pets/${pet.id}`, { key })
        } finally {
          clock.set('2026-11-22T12:00:00Z')
        }
      },
    },
  }

  it('declares exactly the statuses each operation answers, each with its body and headers', async () => {
    const ajv = new Ajv({ strict: false, formats: DOCUMENT_FORMATS })
    ajv.addSchema({ ...doc, $id: 'openapi' })
    for (const { path, method, op } of operations()) {
      const declared = Object.keys(op.responses).sort()
      const own = scenarios[op.operationId] ?? {}
      const produce = (status: string) => own[status]?.() ?? common[status]!({ path, method, takesBody: op.requestBody !== undefined })
      const producible = new Set([...Object.keys(own), ...Object.keys(common).filter((status) => op.responses[status]?.$ref)])
      assert.deepEqual(declared, [...producible].sort(), `${op.operationId}: declared statuses`)
      // Decision D2: what any request can get is documented on every operation.
      for (const status of ['408', '431', '500', '503']) assert.ok(status in op.responses, `${op.operationId} documents ${status}`)
      if (method === 'post') for (const status of ['413', '415']) assert.ok(status in op.responses, `${op.operationId} documents ${status}`)
      for (const status of declared) {
        const res = await produce(status)
        const where = `${op.operationId} ${status}`
        assert.equal(String(res.status), status, `${where}: ${res.text}`)
        const ref = op.responses[status]!.$ref
        if (status === '204') {
          // No Content: the document declares no body, and none is sent.
          assert.equal(resolve(op.responses[status]!).content, undefined, `${where}: no body declared`)
          assert.equal(res.text, '', `${where}: no body sent`)
        } else {
          const pointer = (ref ? [...ref.slice(2).split('/'), 'content', 'application/json', 'schema'] : ['paths', path, method, 'responses', status, 'content', 'application/json', 'schema'])
            .map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1'))
            .join('/')
          const validate = ajv.getSchema(`openapi#/${pointer}`)
          assert.ok(validate, `${where}: a body schema is declared`)
          assert.ok(validate(res.body), `${where}: body matches the schema: ${ajv.errorsText(validate.errors)}`)
        }
        for (const [name, header] of Object.entries(resolve(op.responses[status]!).headers ?? {})) {
          if (header.required) assert.ok(res.headers.has(name), `${where}: required header ${name} is sent`)
        }
      }
    }
  })
})
