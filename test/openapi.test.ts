// The OpenAPI document is generated from the schemas that validate requests; these
// tests check it says what the spec and decisions require, and that every status
// each operation declares is one the server really answers, with the declared body
// and headers.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Ajv } from 'ajv'
import { createManualClock } from '../src/clock.js'
import { ERROR_CODES } from '../src/errors.js'
import { fingerprint, fingerprintOf, IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_TTL_MS } from '../src/routes/v1/idempotency-key.js'
import type { Order } from '../src/schemas/order.js'
import type { Pet } from '../src/schemas/pet.js'
import { STORES, startTestServer, type Reply, type TestServer } from './helpers/server.js'

interface Operation {
  operationId: string
  deprecated?: boolean
  responses: Record<string, { headers?: Record<string, unknown>; content?: { 'application/json': { schema: object } } }>
}
type Document = {
  openapi: string
  info: { version: string }
  servers: { url: string }[]
  paths: Record<string, Record<string, Operation>>
  components: { securitySchemes: Record<string, { type: string; scheme: string }>; schemas: Record<string, { properties: Record<string, { enum?: string[] }> }> }
  security: Record<string, string[]>[]
}

for (const store of STORES) describe(`the OpenAPI document (${store})`, () => {
  const clock = createManualClock('2026-11-22T12:00:00Z')
  let server: TestServer
  let doc: Document
  let key: string
  let pet: Pet
  before(async () => {
    server = await startTestServer({ store, clock })
    key = await server.createKey('enterprise', { perMinute: 10_000, perDay: 100_000 })
    pet = (await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: 'Doc', categoryId: 1 } })).body
    await server.request('/v1/pets', { method: 'POST', key, json: { name: 'Doc 2', categoryId: 1 } })
    doc = (await server.request<Document>('/v1/openapi.json')).body
  })
  after(() => server.close())

  const operations = () =>
    Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })))

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

  it('has exactly listPets, createPet, the deprecated getPet and the store operations (D10)', () => {
    const ops = operations().map(({ path, method, op }) => `${method.toUpperCase()} ${path} ${op.operationId}${op.deprecated ? ' deprecated' : ''}`)
    assert.deepEqual(ops.sort(), [
      'GET /pets listPets',
      'GET /pets/{petId} getPet deprecated',
      'GET /store/inventory getInventory',
      'GET /store/orders listOrders',
      'GET /store/orders/{orderId} getOrder',
      'POST /pets createPet',
      'POST /store/orders placeOrder',
      'POST /store/orders/{orderId}/cancel cancelOrder',
      'POST /store/orders/{orderId}/complete completeOrder',
    ])
  })

  it('requires a bearer key for every operation', () => {
    const schemes = Object.values(doc.components.securitySchemes)
    assert.deepEqual(schemes.map((s) => [s.type, s.scheme]), [['http', 'bearer']])
    assert.equal(doc.security.length, 1)
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

  const scenarios: Record<string, Record<string, () => Promise<Reply>>> = {
    placeOrder: {
      201: async () => server.request('/v1/store/orders', { method: 'POST', key, json: { petId: await newPetId() } }),
      400: () => server.request('/v1/store/orders', { method: 'POST', key, json: {} }),
      401: () => server.request('/v1/store/orders', { method: 'POST', json: { petId: 1 } }),
      404: () => server.request('/v1/store/orders', { method: 'POST', key, json: { petId: 987654321 } }),
      409: async () => {
        // The first request with this key is still running (the declared Retry-After comes with idempotency_key_in_use).
        const petId = await newPetId()
        const options = { fingerprint: fingerprintOf('placeOrder', { petId }), now: clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS }
        await server.store.idempotency.claim({ apiKeyId: await server.keyId(key), key: 'scenario-order-409' }, options)
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
      200: () => server.request('/v1/store/orders?limit=1', { key }),
      400: () => server.request('/v1/store/orders?status=lost', { key }),
      401: () => server.request('/v1/store/orders'),
      429: () => overLimit('/v1/store/orders'),
    },
    getOrder: {
      200: async () => server.request(`/v1/store/orders/${(await newOrder()).id}`, { key }),
      400: () => server.request('/v1/store/orders/zero', { key }),
      401: () => server.request('/v1/store/orders/1'),
      404: () => server.request('/v1/store/orders/987654321', { key }),
      429: () => overLimit('/v1/store/orders/1'),
    },
    completeOrder: closeScenarios('complete'),
    cancelOrder: closeScenarios('cancel'),
    getInventory: {
      200: () => server.request('/v1/store/inventory', { key }),
      401: () => server.request('/v1/store/inventory'),
      429: () => overLimit('/v1/store/inventory'),
    },
    listPets: {
      200: () => server.request('/v1/pets?limit=1', { key }),
      400: () => server.request('/v1/pets?limit=0', { key }),
      401: () => server.request('/v1/pets'),
      429: () => overLimit('/v1/pets'),
    },
    createPet: {
      201: () => server.request('/v1/pets', { method: 'POST', key, json: { name: 'Scenario', categoryId: 2 } }),
      400: () => server.request('/v1/pets', { method: 'POST', key, json: { name: 'Scenario' } }),
      401: () => server.request('/v1/pets', { method: 'POST', json: { name: 'Scenario', categoryId: 2 } }),
      413: () => server.request('/v1/pets', { method: 'POST', key, json: { name: 'x'.repeat(70_000), categoryId: 2 } }),
      415: () => server.request('/v1/pets', { method: 'POST', key, body: 'name=Rex', headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      409: async () => {
        // The first request with this key is still running: its claim is in the store.
        const json = { name: 'In flight', categoryId: 2 }
        const options = { fingerprint: fingerprint(json), now: clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS }
        await server.store.idempotency.claim({ apiKeyId: await server.keyId(key), key: 'scenario-409' }, options)
        return server.request('/v1/pets', { method: 'POST', key, json, headers: { 'idempotency-key': 'scenario-409' } })
      },
      422: async () => {
        const headers = { 'idempotency-key': 'scenario-422' }
        await server.request('/v1/pets', { method: 'POST', key, json: { name: 'First', categoryId: 2 }, headers })
        return server.request('/v1/pets', { method: 'POST', key, json: { name: 'Other', categoryId: 2 }, headers })
      },
      429: () => overLimit('/v1/pets', { method: 'POST', json: { name: 'Scenario', categoryId: 2 } }),
    },
    getPet: {
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
    const ajv = new Ajv({ strict: false, formats: { int64: true } })
    ajv.addSchema({ ...doc, $id: 'openapi' })
    for (const { path, method, op } of operations()) {
      const declared = Object.keys(op.responses).sort()
      assert.deepEqual(declared, Object.keys(scenarios[op.operationId] ?? {}).sort(), `${op.operationId}: declared statuses`)
      for (const status of declared) {
        const res = await scenarios[op.operationId]![status]!()
        const where = `${op.operationId} ${status}`
        assert.equal(String(res.status), status, `${where}: ${res.text}`)
        const pointer = ['paths', path, method, 'responses', status, 'content', 'application/json', 'schema']
          .map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1'))
          .join('/')
        const validate = ajv.getSchema(`openapi#/${pointer}`)
        assert.ok(validate, `${where}: a body schema is declared`)
        assert.ok(validate(res.body), `${where}: body matches the schema: ${ajv.errorsText(validate.errors)}`)
        for (const name of Object.keys(op.responses[status]!.headers ?? {})) {
          assert.ok(res.headers.has(name), `${where}: declared header ${name} is sent`)
        }
      }
    }
  })
})
