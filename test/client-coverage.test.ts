// The typed client covers every operation of the served OpenAPI document: a method
// named by each operationId (a test that fails when an operation is added to the API
// and not to the client), and each of them, against a real server on every store,
// reaches its operation and returns what the schemas say.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createClient, PetstoreError, type PetstoreClient } from '../src/client/index.js'
import type { OperationId } from '../src/client/errors.js'
import { UNLIMITED } from './helpers/keys.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

interface Document {
  paths: Record<string, Record<string, { operationId?: string }>>
}

for (const store of STORES) describe(`typed client: every operation of the document (${store})`, () => {
  let server: TestServer
  let client: PetstoreClient
  before(async () => {
    server = await startTestServer({ store })
    const key = await server.createKey('enterprise', UNLIMITED, {
      scopes: ['pets:read', 'pets:write', 'categories:read', 'categories:write', 'orders:read', 'orders:write', 'usage:read', 'events:read', 'webhooks:read', 'webhooks:write', 'keys:read', 'keys:write'],
    })
    client = createClient({ baseUrl: server.url, apiKey: key, maxAttempts: 1 })
  })
  after(() => server.close())

  it('has a method for each operationId of the served document', async () => {
    const document = (await server.request<Document>('/v1/openapi.json')).body
    const operations = Object.values(document.paths).flatMap((methods) => Object.values(methods).map((operation) => operation.operationId).filter((id) => id !== undefined))
    assert.ok(operations.length >= 35, `the document lists ${operations.length} operations`)
    const missing = operations.filter((id) => typeof (client as unknown as Record<string, unknown>)[id] !== 'function')
    assert.deepEqual(missing, [], 'operations the client has no method for')
    // And the client's error type names each of them (PetstoreError.operation).
    const named: readonly OperationId[] = operations as OperationId[]
    assert.equal(named.length, operations.length)
  })

  it('manages categories', async () => {
    const made = await client.createCategory({ name: 'Client cats' })
    assert.deepEqual(await client.getCategory(made.id), made)
    assert.deepEqual(await client.updateCategory(made.id, { description: 'x' }), { ...made, description: 'x' })
    const pages = await client.listCategories({ limit: 3 })
    assert.equal(pages.categories.length, 3)
    assert.ok(pages.nextCursor)
    const all: number[] = []
    for await (const category of client.allCategories({ limit: 3 })) all.push(category.id)
    assert.ok(all.includes(made.id) && all.length >= 8)
    await client.deleteCategory(made.id)
    await assert.rejects(client.getCategory(made.id), (error: unknown) => error instanceof PetstoreError && error.code === 'not_found' && error.operation === 'getCategory')
  })

  it('lists pets with filters, and the ETags of ids', async () => {
    const a = await client.createPet({ name: 'Filtered one', categoryId: 5 })
    const b = await client.createPet({ name: 'Filtered two', categoryId: 6, status: 'sold' })
    const page = await client.listPets({ categoryId: [5, 6], q: 'filtered', sort: '-id', status: ['available', 'sold'] })
    assert.deepEqual(page.pets.map((p) => p.id), [b.id, a.id])
    const byIds = await client.listPets({ ids: [a.id, b.id] })
    const { etag } = await client.updatePet(a.id, { name: 'Filtered one' })
    assert.equal(byIds.etags?.[a.id], etag)
  })

  it('reads the account, its usage and history, and manages keys', async () => {
    const account = await client.getAccount()
    assert.equal(typeof account.id, 'number')
    assert.equal(typeof (await client.getUsage()), 'object')
    assert.ok(Array.isArray(await client.getUsageHistory({ granularity: 'day' })))
    const made = await client.createKey({ name: 'client-made', scopes: ['pets:read'] })
    assert.ok(made.key?.startsWith('ps_test_'))
    assert.equal(made.apiKey.name, 'client-made')
    assert.deepEqual(await client.getKey(made.apiKey.id), made.apiKey)
    assert.equal((await client.updateKey(made.apiKey.id, { name: 'renamed' })).name, 'renamed')
    const listed = await client.listKeys({ limit: 100 })
    assert.ok(listed.items.some((k) => k.id === made.apiKey.id))
    assert.ok(Array.isArray(await client.getKeyUsage(made.apiKey.id)))
    const unbanned = await client.unbanKey(made.apiKey.id)
    assert.equal(unbanned.id, made.apiKey.id)
    const rolled = await client.rollKey(made.apiKey.id, { graceSeconds: 0 })
    assert.notEqual(rolled.apiKey.id, made.apiKey.id)
    const revoked = await client.revokeKey(rolled.apiKey.id)
    assert.deepEqual(revoked.revoked, [rolled.apiKey.id])
    assert.ok(revoked.key.revokedAt)
  })

  it('lists events and manages webhook endpoints', async () => {
    await client.createPet({ name: 'Eventful', categoryId: 1 })
    const events = await client.listEvents({ type: 'pet.created', limit: 1 })
    assert.equal(events.items[0]?.type, 'pet.created')
    // A public address given as a literal: nothing to resolve, and nothing is ever sent (the receiver does not answer in tests).
    const endpoint = await client.createWebhookEndpoint({ url: 'https://93.184.215.14/hook', enabledEvents: ['pet.created'] })
    assert.ok(endpoint.secret?.startsWith('whsec_'))
    assert.deepEqual((await client.listWebhookEndpoints()).map((e) => e.id), [endpoint.id])
    assert.equal((await client.getWebhookEndpoint(endpoint.id)).url, 'https://93.184.215.14/hook')
    assert.equal((await client.updateWebhookEndpoint(endpoint.id, { description: 'mine' })).description, 'mine')
    const rotated = await client.rotateWebhookSecret(endpoint.id, { graceSeconds: 0 })
    assert.ok(rotated.secret && rotated.secret !== endpoint.secret)
    assert.equal((await client.testWebhookEndpoint(endpoint.id)).type, 'webhook_endpoint.test')
    assert.ok(Array.isArray(await client.listWebhookDeliveries(endpoint.id)))
    const redelivered = await client.redeliverEvent(events.items[0]!.id)
    assert.equal(redelivered.deliveries, 1)
    await client.deleteWebhookEndpoint(endpoint.id)
    assert.deepEqual(await client.listWebhookEndpoints(), [])
  })
})
