// The typed client's store orders (decision D10), against a real server; retries
// proved with an injected fetch that loses answers, or a scripted node:http server.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createClient, PetstoreError, PetstoreNetworkError, type ClientOptions, type Inventory, type Order, type Pet, type PetstoreClient } from '../src/client/index.js'
import { errorBody, flakyFetch, recordingSleep, rejectsWith, scriptedServer } from './helpers/client-fakes.js'
import { createConsumerProject, type ConsumerProject } from './helpers/consumer-project.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

function assertTime(value: string | undefined, what: string) {
  assert.ok(value !== undefined && !Number.isNaN(Date.parse(value)), `${what}: ${String(value)} is not a date-time`)
}

/** The pet's status as listPets shows it (getPet is deprecated and warns). */
async function petStatus(client: PetstoreClient, pet: Pet): Promise<Pet['status'] | undefined> {
  for await (const each of client.allPets({ limit: 100 })) if (each.id === pet.id) return each.status
  return undefined
}

describe('typed client: store orders', () => {
  let server: TestServer
  let options: ClientOptions
  let client: PetstoreClient
  before(async () => {
    server = await startTestServer()
    options = { baseUrl: server.url, apiKey: await server.createKey('enterprise', { perMinute: 10_000, perDay: 100_000 }) }
    client = createClient(options)
  })
  after(() => server.close())

  it('places an order (pet pending), completes one (pet sold) and cancels one (pet available), with the inventory following exactly', async () => {
    const start: Inventory = await client.getInventory()
    const [rex, bella] = [await client.createPet({ name: 'Rex', categoryId: 1 }), await client.createPet({ name: 'Bella', categoryId: 1 })]

    const placed: Order = await client.placeOrder(rex.id)
    assert.equal(placed.petId, rex.id)
    assert.equal(placed.status, 'placed')
    assertTime(placed.placedAt, 'placedAt')
    assert.equal(placed.closedAt ?? undefined, undefined)
    assert.equal(await petStatus(client, rex), 'pending')
    assert.deepEqual(await client.getOrder(placed.id), placed)

    const completed = await client.completeOrder(placed.id)
    assert.deepEqual({ ...completed, closedAt: undefined }, { ...placed, status: 'completed', closedAt: undefined })
    assertTime(completed.closedAt, 'closedAt')
    assert.ok(Date.parse(completed.closedAt!) >= Date.parse(placed.placedAt))
    assert.equal(await petStatus(client, rex), 'sold')

    const other = await client.placeOrder(bella.id)
    const cancelled = await client.cancelOrder(other.id)
    assert.equal(cancelled.status, 'cancelled')
    assertTime(cancelled.closedAt, 'closedAt')
    assert.equal(await petStatus(client, bella), 'available')
    assert.deepEqual(await client.getOrder(other.id), cancelled)

    // Two pets added: Rex ended sold, Bella available again.
    assert.deepEqual(await client.getInventory(), { available: start.available + 1, pending: start.pending, sold: start.sold + 1 })
  })

  it('throws pet_unavailable (409) for a pending or sold pet, and not_found for no pet, without retrying', async () => {
    const traced = flakyFetch()
    const tracing = createClient({ ...options, fetch: traced.fetch })
    const pet = await client.createPet({ name: 'Taken', categoryId: 2 })
    await client.placeOrder(pet.id)
    const pending = await rejectsWith(tracing.placeOrder(pet.id), PetstoreError)
    assert.equal(pending.status, 409)
    assert.equal(pending.code, 'pet_unavailable')
    assert.equal(pending.operation, 'placeOrder')
    assert.equal(pending.attempts, 1)
    assert.ok(pending.requestId)
    assert.equal(pending.rateLimit?.limit, 10_000)

    const sold = await client.createPet({ name: 'Gone', categoryId: 2, status: 'sold' })
    assert.equal((await rejectsWith(tracing.placeOrder(sold.id), PetstoreError)).code, 'pet_unavailable')
    const missing = await rejectsWith(tracing.placeOrder(987_654_321), PetstoreError)
    assert.equal(missing.status, 404)
    assert.equal(missing.code, 'not_found')
    assert.equal(traced.seen.length, 3)
  })

  it('throws order_closed (409) for a second transition of an order, without retrying', async () => {
    const traced = flakyFetch()
    const tracing = createClient({ ...options, fetch: traced.fetch })
    const order = await client.placeOrder((await client.createPet({ name: 'Once', categoryId: 3 })).id)
    await client.completeOrder(order.id)
    for (const close of [tracing.completeOrder, tracing.cancelOrder]) {
      const error = await rejectsWith(close(order.id), PetstoreError)
      assert.equal(error.status, 409)
      assert.equal(error.code, 'order_closed')
      assert.equal(error.attempts, 1)
    }
    assert.deepEqual(
      traced.seen.map(({ method, url }) => `${method} ${new URL(url).pathname}`),
      [`POST /v1/store/orders/${order.id}/complete`, `POST /v1/store/orders/${order.id}/cancel`],
    )
    assert.equal((await client.getOrder(order.id)).status, 'completed')
  })

  it('lists orders a page at a time with the status filter, and walks every page with allOrders', async () => {
    // A key of its own, so that the list holds only this test's orders.
    const listerOptions = { ...options, apiKey: await server.createKey('enterprise', { perMinute: 10_000, perDay: 100_000 }) }
    const lister = createClient(listerOptions)
    const orders: Order[] = []
    for (let i = 1; i <= 5; i++) orders.push(await lister.placeOrder((await lister.createPet({ name: `Listed ${i}`, categoryId: 4 })).id))
    await lister.cancelOrder(orders[1]!.id)
    const placedIds = orders.filter((_, i) => i !== 1).map((order) => order.id)

    const first = await lister.listOrders({ status: 'placed', limit: 3 })
    assert.deepEqual(
      first.orders.map((order) => order.id),
      placedIds.slice(0, 3),
    )
    assert.ok(first.orders.every((order) => order.status === 'placed'))
    assert.ok(first.nextCursor)
    assert.equal(first.rateLimit?.limit, 10_000)
    assert.ok(first.requestId)
    const second = await lister.listOrders({ status: 'placed', limit: 3, cursor: first.nextCursor })
    assert.deepEqual(
      second.orders.map((order) => order.id),
      placedIds.slice(3),
    )
    assert.equal(second.nextCursor, undefined)
    assert.deepEqual(
      (await lister.listOrders({ status: 'cancelled' })).orders.map((order) => order.id),
      [orders[1]!.id],
    )

    const traced = flakyFetch()
    const walked: Order[] = []
    for await (const order of createClient({ ...listerOptions, fetch: traced.fetch }).allOrders({ limit: 2 })) walked.push(order)
    assert.deepEqual(
      walked.map((order) => order.id),
      orders.map((order) => order.id),
    )
    // Three pages of 2, 2 and 1; the later ones carry the cursor and keep the limit.
    assert.equal(traced.seen.length, 3)
    for (const { url } of traced.seen.slice(1)) assert.match(url, /\/v1\/store\/orders\?limit=2&cursor=/)
  })

  it("keeps each key's orders private: another key cannot get, list, complete or cancel them", async () => {
    const order = await client.placeOrder((await client.createPet({ name: 'Mine', categoryId: 5 })).id)
    const stranger = createClient({ ...options, apiKey: await server.createKey('pro') })
    for (const call of [() => stranger.getOrder(order.id), () => stranger.completeOrder(order.id), () => stranger.cancelOrder(order.id)]) {
      const error = await rejectsWith(call(), PetstoreError)
      assert.equal(error.status, 404)
      assert.equal(error.code, 'not_found')
    }
    assert.deepEqual((await stranger.listOrders()).orders, [])
    // Untouched by the stranger's attempts.
    assert.deepEqual(await client.getOrder(order.id), order)
  })
})

describe('typed client: order retries', () => {
  let server: TestServer
  let options: ClientOptions
  let client: PetstoreClient
  before(async () => {
    server = await startTestServer()
    options = { baseUrl: server.url, apiKey: await server.createKey('enterprise', { perMinute: 10_000, perDay: 100_000 }) }
    client = createClient(options)
  })
  after(() => server.close())

  const newPet = (name: string) => client.createPet({ name, categoryId: 6 })

  it('places exactly one order when the answer to placeOrder is lost: the retry gets the replay', async () => {
    const pet = await newPet('Lost answer')
    const traced = flakyFetch((call) => (call === 1 ? 'after-response' : false))
    const { sleep } = recordingSleep()
    const order = await createClient({ ...options, fetch: traced.fetch, sleep }).placeOrder(pet.id)
    const keys = traced.seen.map((request) => request.headers.get('idempotency-key'))
    assert.equal(keys.length, 2)
    assert.match(keys[0]!, UUID)
    assert.equal(keys[1], keys[0])
    assert.equal(traced.replies[0]!.status, 201)
    assert.equal(traced.replies[1]!.status, 201)
    assert.equal(traced.replies[1]!.headers.get('idempotent-replayed'), 'true')
    assert.equal(order.petId, pet.id)
    assert.deepEqual(
      (await client.listOrders({ limit: 100 })).orders.filter((each) => each.petId === pet.id),
      [order],
    )
    // Each call has a key of its own.
    const again = flakyFetch()
    await createClient({ ...options, fetch: again.fetch }).placeOrder((await newPet('Another')).id)
    assert.notEqual(again.seen[0]!.headers.get('idempotency-key'), keys[0])
  })

  it("returns the first order again for a repeated Idempotency-Key, and sends the caller's key on every attempt", async () => {
    const pet = await newPet('Keyed')
    const idempotencyKey = `adopt-${randomUUID()}`
    const traced = flakyFetch((call) => (call === 1 ? 'before' : false))
    const { sleep } = recordingSleep()
    const first = await createClient({ ...options, fetch: traced.fetch, sleep }).placeOrder(pet.id, { idempotencyKey })
    assert.deepEqual(
      traced.seen.map((request) => request.headers.get('idempotency-key')),
      [idempotencyKey, idempotencyKey],
    )
    // Without the key the second call would be a 409 pet_unavailable: the pet is pending.
    assert.deepEqual(await client.placeOrder(pet.id, { idempotencyKey }), first)
    const reused = await rejectsWith(client.placeOrder((await newPet('Other')).id, { idempotencyKey }), PetstoreError)
    assert.equal(reused.code, 'idempotency_key_reused')
  })

  it('does not retry placeOrder sent without an idempotency key after a network failure', async () => {
    const pet = await newPet('Unkeyed')
    const traced = flakyFetch((call) => (call === 1 ? 'after-response' : false))
    const { sleep, waits } = recordingSleep()
    const error = await rejectsWith(createClient({ ...options, fetch: traced.fetch, sleep }).placeOrder(pet.id, { idempotencyKey: false }), PetstoreNetworkError)
    assert.equal(error.attempts, 1)
    assert.match(error.message, /placeOrder: no answer from .*\/v1\/store\/orders: fetch failed: socket hang up/)
    assert.equal(traced.seen[0]!.headers.get('idempotency-key'), null)
    assert.deepEqual(waits, [])
  })

  for (const operation of ['completeOrder', 'cancelOrder'] as const) {
    it(`does not retry ${operation} after a lost answer (it may have worked); getOrder tells the outcome`, async () => {
      const order = await client.placeOrder((await newPet(operation)).id)
      const traced = flakyFetch((call) => (call === 1 ? 'after-response' : false))
      const { sleep, waits } = recordingSleep()
      const error = await rejectsWith(createClient({ ...options, fetch: traced.fetch, sleep })[operation](order.id), PetstoreNetworkError)
      assert.equal(error.attempts, 1)
      assert.equal(error.operation, operation)
      assert.equal(traced.seen.length, 1)
      assert.deepEqual(waits, [])
      assert.equal((await client.getOrder(order.id)).status, operation === 'completeOrder' ? 'completed' : 'cancelled')
    })

    it(`retries ${operation} after a 429 (refused before it ran), but not after a 503 outcome_unknown (it may have closed the order)`, async () => {
      const order = { id: 3, petId: 9, status: operation === 'completeOrder' ? 'completed' : 'cancelled', placedAt: '2026-11-23T10:00:00.000Z', closedAt: '2026-11-23T10:05:00.000Z' }
      const scripted = await scriptedServer([
        { status: 429, headers: { 'retry-after': '2' }, body: errorBody(429, 'rate_limited') },
        { status: 503, body: errorBody(503, 'outcome_unknown') },
        { status: 200, body: order },
      ])
      try {
        const { sleep, waits } = recordingSleep()
        const scriptedClient = createClient({ baseUrl: scripted.url, apiKey: 'k', sleep })
        const refused = await rejectsWith(scriptedClient[operation](3), PetstoreError)
        assert.equal(refused.status, 503)
        assert.equal(refused.attempts, 2)
        assert.deepEqual(waits, [2000])
        assert.deepEqual(await scriptedClient[operation](3), order)
        const action = operation === 'completeOrder' ? 'complete' : 'cancel'
        assert.deepEqual(
          scripted.seen.map(({ method, url }) => `${method} ${url}`),
          [`POST /v1/store/orders/3/${action}`, `POST /v1/store/orders/3/${action}`, `POST /v1/store/orders/3/${action}`],
        )
      } finally {
        await scripted.close()
      }
    })
  }

  it('retries the reads (getOrder, listOrders, getInventory) after network failures', async () => {
    const order = await client.placeOrder((await newPet('Read')).id)
    const traced = flakyFetch((call) => (call % 2 === 1 ? 'before' : false))
    const { sleep } = recordingSleep()
    const reader = createClient({ ...options, fetch: traced.fetch, sleep })
    assert.deepEqual(await reader.getOrder(order.id), order)
    assert.ok((await reader.listOrders()).orders.some((each) => each.id === order.id))
    assert.deepEqual(await reader.getInventory(), await client.getInventory())
    assert.deepEqual(
      traced.seen.map(({ method, url }) => `${method} ${new URL(url).pathname}`),
      [`GET /v1/store/orders/${order.id}`, `GET /v1/store/orders/${order.id}`, 'GET /v1/store/orders', 'GET /v1/store/orders', 'GET /v1/store/inventory', 'GET /v1/store/inventory'],
    )
  })
})

describe('petstore/client orders types, as an installed package sees them', () => {
  let project: ConsumerProject
  before(() => {
    project = createConsumerProject()
  })
  after(() => project.remove())

  it("type-checks a TypeScript project that uses the orders methods and types", async () => {
    await project.typeCheck(
      `import { createClient, PetstoreError, type Inventory, type Order, type OrderPage, type OrderStatus } from 'petstore/client'
const client = createClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'ps_test_x' })
const placed: Promise<Order> = client.placeOrder(1, { idempotencyKey: 'k' })
const status: OrderStatus = 'cancelled'
const page: Promise<OrderPage> = client.listOrders({ status, limit: 5 })
const closed: Promise<string | undefined> = client.completeOrder(1).then((order) => order.closedAt)
const sold: Promise<number> = client.getInventory().then((inventory: Inventory) => inventory.sold)
// @ts-expect-error "pending" is a pet's status, not an order's
const wrong: OrderStatus = 'pending'
// @ts-expect-error placeOrder takes the pet's id, not a body
const body = client.placeOrder({ petId: 1 })
function conflict(error: unknown): boolean {
  return error instanceof PetstoreError && (error.code === 'pet_unavailable' || error.code === 'order_closed')
}
export { placed, page, closed, sold, wrong, body, conflict }
`)
  })
})
