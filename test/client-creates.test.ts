// The typed client's creates never duplicate on retry, on both stores: createPet,
// placeOrder, createCategory, createWebhookEndpoint and createKey each send a generated
// Idempotency-Key (or the caller's) and reuse it on every retry, so that a first
// attempt whose answer is lost after the server wrote ends in exactly one resource,
// answered by the retry's replay (a key's and an endpoint's secret included).
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createClient, PetstoreNetworkError, type ClientOptions, type PetstoreClient } from '../src/client/index.js'
import { SCOPES } from '../src/vocabulary/scopes.js'
import { flakyFetch, recordingSleep, rejectsWith } from './helpers/client-fakes.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

for (const store of STORES) describe(`the client's creates after a lost answer (${store})`, () => {
  let server: TestServer
  let options: ClientOptions
  let client: PetstoreClient
  before(async () => {
    server = await startTestServer({ store, env: { PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } })
    options = { baseUrl: server.url, apiKey: await server.createKey('enterprise', { perMinute: 10_000, perDay: 100_000 }, { scopes: SCOPES }) }
    client = createClient(options)
  })
  after(() => server.close())

  /** A client whose first attempt reaches the server, which writes and answers, and whose answer is then lost. */
  function losingFirstAnswer() {
    const traced = flakyFetch((call) => (call === 1 ? 'after-response' : false))
    return { traced, lossy: createClient({ ...options, fetch: traced.fetch, sleep: recordingSleep().sleep }) }
  }
  /** Two attempts with one generated key; the first wrote (201), the second was its replay. */
  function assertRetriedAsReplay(traced: ReturnType<typeof flakyFetch>) {
    const keys = traced.seen.map((request) => request.headers.get('idempotency-key'))
    assert.equal(keys.length, 2)
    assert.match(keys[0]!, UUID)
    assert.equal(keys[1], keys[0])
    assert.deepEqual(traced.replies.map((reply) => [reply.status, reply.headers.get('idempotent-replayed')]), [[201, null], [201, 'true']])
  }

  const suffix = randomUUID().slice(0, 8)
  const cases: [string, (lossy: PetstoreClient) => Promise<number>][] = [
    [
      'createPet',
      async (lossy) => {
        const pet = await lossy.createPet({ name: `Once ${suffix}`, categoryId: 1 })
        return (await client.listPets({ q: suffix, limit: 100 })).pets.filter((each) => each.name === pet.name).length
      },
    ],
    [
      'placeOrder',
      async (lossy) => {
        const pet = await client.createPet({ name: `Adopted ${suffix}`, categoryId: 1 })
        const order = await lossy.placeOrder(pet.id)
        assert.equal(order.petId, pet.id)
        return (await client.listOrders({ limit: 100 })).orders.filter((each) => each.petId === pet.id).length
      },
    ],
    [
      'createCategory',
      async (lossy) => {
        const category = await lossy.createCategory({ name: `Kind ${suffix}` })
        const all = []
        for await (const each of client.allCategories()) all.push(each)
        return all.filter((each) => each.name === category.name).length
      },
    ],
    [
      'createWebhookEndpoint',
      async (lossy) => {
        const url = `http://127.0.0.1:9/${suffix}`
        const endpoint = await lossy.createWebhookEndpoint({ url, enabledEvents: ['pet.created'] })
        assert.match(endpoint.secret ?? '', /^whsec_/, 'the replay carries the signing secret')
        return (await client.listWebhookEndpoints()).filter((each) => each.url === url).length
      },
    ],
    [
      'createKey',
      async (lossy) => {
        const made = await lossy.createKey({ name: `retried ${suffix}`, scopes: ['pets:read'] })
        assert.ok(made.key, 'the replay carries the secret')
        await createClient({ baseUrl: server.url, apiKey: made.key }).listPets({ limit: 1 })
        return (await client.listKeys({ limit: 100 })).items.filter((each) => each.name === `retried ${suffix}`).length
      },
    ],
  ]
  for (const [operation, createAndCount] of cases) {
    it(`${operation}: the retry gets the replay, and exactly one is made`, async () => {
      const { traced, lossy } = losingFirstAnswer()
      assert.equal(await createAndCount(lossy), 1)
      assertRetriedAsReplay(traced)
    })
  }

  it("sends the caller's Idempotency-Key on every attempt, and none with false (a lost answer then is not retried)", async () => {
    const mine = (operation: string) => `${operation}-${suffix}`
    const keyed = losingFirstAnswer()
    await keyed.lossy.createCategory({ name: `Keyed ${suffix}` }, { idempotencyKey: mine('category') })
    await keyed.lossy.createWebhookEndpoint({ url: `http://127.0.0.1:9/keyed-${suffix}`, enabledEvents: ['*'] }, { idempotencyKey: mine('endpoint') })
    await keyed.lossy.createKey({ name: `keyed ${suffix}` }, { idempotencyKey: mine('key') })
    assert.deepEqual(
      keyed.traced.seen.map((request) => request.headers.get('idempotency-key')),
      [mine('category'), mine('category'), mine('endpoint'), mine('key')],
    )
    const unkeyed = losingFirstAnswer()
    await rejectsWith(unkeyed.lossy.createKey({ name: `unkeyed ${suffix}` }, { idempotencyKey: false }), PetstoreNetworkError)
    assert.equal(unkeyed.traced.seen.length, 1)
    assert.equal(unkeyed.traced.seen[0]!.headers.get('idempotency-key'), null)
  })
})
