// Store orders (decision D10) on every store: the adoption workflow, its races
// across two instances on one database, privacy between keys, the inventory, and
// the very next list call on the other instance showing each change.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { openDatabase } from './helpers/database.js'
import { encodeCursor } from '../src/routes/v1/cursor.js'
import type { ErrorBody } from '../src/errors.js'
import type { Inventory, Order } from '../src/schemas/order.js'
import type { Pet, PetStatus } from '../src/schemas/pet.js'
import { spawnServer, type ServerProcess } from './helpers/process.js'
import { STORES, startTestServer, type Reply, type TestServer } from './helpers/server.js'

for (const store of STORES) describe(`store orders (${store})`, () => {
  let a: TestServer
  /** A second instance on the same database (the same SQLite file, or the same PostgreSQL database). */
  let b: TestServer
  let key: string
  let otherKey: string
  before(async () => {
    a = await startTestServer({ store })
    b = await startTestServer({ env: { DATABASE_URL: a.config.databaseUrl } })
    key = await a.createKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 })
    otherKey = await a.createKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 })
  })
  after(async () => {
    await b.close()
    await a.close()
  })

  /** A success body or an Error body (`status` is the Order's or the Error's). */
  type Answer<T> = Reply<T & Partial<Omit<ErrorBody, 'status'>>>
  const newPet = async (status: PetStatus = 'available', server = a) =>
    (await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: `adoptable ${randomUUID()}`, categoryId: 1, status } })).body
  const place = (petId: unknown, { server = a, apiKey = key, idempotencyKey }: { server?: TestServer; apiKey?: string; idempotencyKey?: string } = {}) =>
    server.request<Order & Partial<Omit<ErrorBody, 'status'>>>('/v1/store/orders', {
      method: 'POST',
      key: apiKey,
      json: { petId },
      headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
    })
  const close = (orderId: number, action: 'complete' | 'cancel', { server = a, apiKey = key } = {}): Promise<Answer<Order>> =>
    server.request(`/v1/store/orders/${orderId}/${action}`, { method: 'POST', key: apiKey })
  /** The pet's status as the list shows it (the first page of pets from its id on): what a client sees. */
  const from = (petId: number) => (petId > 1 ? `&cursor=${encodeCursor(petId - 1)}` : '')
  const listedStatus = async (petId: number, server = a): Promise<PetStatus | undefined> => {
    const before = from(petId)
    const res = await server.request<Pet[]>(`/v1/pets?limit=1${before}`, { key })
    assert.equal(res.status, 200, res.text)
    return res.body[0]?.id === petId ? res.body[0].status : undefined
  }
  /** Whether the status-filtered list shows the pet: the other cached page a client may read. */
  const listedUnder = async (status: PetStatus, petId: number, server = a) => {
    const res = await server.request<Pet[]>(`/v1/pets?status=${status}&limit=100${from(petId)}`, { key })
    return res.body.some((p) => p.id === petId)
  }

  it('reserves an available pet: 201 placed with Location and placedAt, and the pet is pending', async () => {
    const pet = await newPet()
    const res = await place(pet.id)
    assert.equal(res.status, 201, res.text)
    assert.deepEqual(Object.keys(res.body).sort(), ['id', 'petId', 'placedAt', 'status'])
    assert.equal(res.body.petId, pet.id)
    assert.equal(res.body.status, 'placed')
    assert.match(res.body.placedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    assert.equal(res.headers.get('location'), `/v1/store/orders/${res.body.id}`)
    assert.equal(await listedStatus(pet.id), 'pending')
    assert.deepEqual((await a.request(`/v1/store/orders/${res.body.id}`, { key })).body, res.body)
  })

  it('answers 404 not_found for no such pet, and 409 pet_unavailable for a pending or sold pet', async () => {
    const missing = await place(987_654_321)
    assert.equal(missing.status, 404)
    assert.deepEqual(Object.keys(missing.body), ['code', 'message', 'status'])
    assert.equal(missing.body.code, 'not_found')
    for (const status of ['pending', 'sold'] as const) {
      const pet = await newPet(status)
      const res = await place(pet.id)
      assert.equal(res.status, 409, res.text)
      assert.deepEqual(res.body, { code: 'pet_unavailable', message: res.body.message, status: 409 } as unknown)
      // The message says which: a caller can tell "wait for the other order" from "gone for good".
      assert.match(res.body.message!, status === 'sold' ? /already sold/ : /it is pending \(reserved by an order, or marked so/)
      assert.equal(await listedStatus(pet.id), status, 'unchanged')
    }
  })

  it('completes an order: 200 completed with closedAt, the pet sold; then 409 order_closed for complete and cancel', async () => {
    const pet = await newPet()
    const order = (await place(pet.id)).body
    const done = await close(order.id, 'complete')
    assert.equal(done.status, 200, done.text)
    assert.equal(done.body.status, 'completed')
    assert.match(done.body.closedAt!, /^\d{4}-\d\d-\d\dT/)
    assert.equal(await listedStatus(pet.id), 'sold')
    for (const action of ['complete', 'cancel'] as const) {
      const again = await close(order.id, action)
      assert.equal(again.status, 409)
      assert.deepEqual(again.body, { code: 'order_closed', message: again.body.message, status: 409 } as unknown)
      assert.match(again.body.message!, /was already completed/, 'says how the order was closed')
    }
    assert.equal((await place(pet.id)).status, 409, 'a sold pet cannot be reserved again')
  })

  it('cancels an order: 200 cancelled, the pet available again and reservable anew', async () => {
    const pet = await newPet()
    const order = (await place(pet.id)).body
    const cancelled = await close(order.id, 'cancel')
    assert.equal(cancelled.status, 200, cancelled.text)
    assert.equal(cancelled.body.status, 'cancelled')
    assert.ok(cancelled.body.closedAt)
    assert.equal(await listedStatus(pet.id), 'available')
    assert.equal((await close(order.id, 'complete')).status, 409)
    const again = await place(pet.id)
    assert.equal(again.status, 201)
    assert.notEqual(again.body.id, order.id)
  })

  it('completes and cancels with an empty body sent as application/json, as many HTTP clients send every POST', async () => {
    for (const action of ['complete', 'cancel'] as const) {
      const order = (await place((await newPet()).id)).body
      const res = await a.request<Order>(`/v1/store/orders/${order.id}/${action}`, { method: 'POST', key, body: '', headers: { 'content-type': 'application/json' } })
      assert.equal(res.status, 200, res.text)
      assert.equal(res.body.status, action === 'complete' ? 'completed' : 'cancelled')
    }
  })

  it('keeps orders private: another key cannot read, list, complete or cancel them (404 exactly like a missing order)', async () => {
    const pet = await newPet()
    const order = (await place(pet.id)).body
    const missingId = order.id + 1_000_000
    const strip = (res: Answer<unknown>) => ({ status: res.status, code: res.body.code, message: res.body.message?.replace(/\d+/g, 'N') })
    const missing = strip(await a.request(`/v1/store/orders/${missingId}`, { key: otherKey }))
    assert.equal(missing.status, 404)
    assert.deepEqual(strip(await a.request(`/v1/store/orders/${order.id}`, { key: otherKey })), missing)
    for (const action of ['complete', 'cancel'] as const) {
      assert.deepEqual(strip(await close(order.id, action, { apiKey: otherKey })), strip(await close(missingId, action, { apiKey: otherKey })))
    }
    const theirs = await a.request<Order[]>('/v1/store/orders?limit=100', { key: otherKey })
    assert.ok(!theirs.body.some((o) => o.id === order.id))
    assert.equal((await a.request<Order>(`/v1/store/orders/${order.id}`, { key })).body.status, 'placed', 'untouched')
    assert.equal(await listedStatus(pet.id), 'pending')
  })

  it('lists only the caller\'s orders in id order, by status, a page at a time with Link rel=next', async () => {
    const lister = await a.createKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 })
    const mine: Order[] = []
    for (let i = 0; i < 5; i++) mine.push((await place((await newPet()).id, { apiKey: lister })).body)
    await close(mine[1]!.id, 'cancel', { apiKey: lister })
    const seen: Order[] = []
    let path: string | undefined = '/v1/store/orders?limit=2'
    while (path) {
      const res: Reply<Order[]> = await a.request<Order[]>(path, { key: lister })
      assert.equal(res.status, 200, res.text)
      assert.ok(res.body.length <= 2)
      seen.push(...res.body)
      path = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1]
    }
    assert.deepEqual(seen.map((o) => o.id), mine.map((o) => o.id))
    const placed = await a.request<Order[]>('/v1/store/orders?status=placed', { key: lister })
    assert.deepEqual(placed.body.map((o) => o.id), [0, 2, 3, 4].map((i) => mine[i]!.id))
    assert.equal((await a.request<Order[]>('/v1/store/orders?status=cancelled', { key: lister })).body[0]?.id, mine[1]!.id)
    const bad = await a.request<ErrorBody>('/v1/store/orders?cursor=nonsense', { key: lister })
    assert.equal(bad.status, 400)
    assert.equal(bad.body.code, 'invalid_parameter')
  })

  it('counts the inventory exactly, and changes it with every reservation, completion and cancellation', async () => {
    const count = async (server: TestServer) => {
      const tally: Inventory = { available: 0, pending: 0, sold: 0 }
      let path: string | undefined = '/v1/pets?limit=100'
      while (path) {
        const res: Reply<Pet[]> = await server.request<Pet[]>(path, { key })
        for (const pet of res.body) tally[pet.status]++
        path = /^<([^>]+)>/.exec(res.headers.get('link') ?? '')?.[1]
      }
      return tally
    }
    const inventory = async (server: TestServer) => {
      const res = await server.request<Inventory>('/v1/store/inventory', { key })
      assert.equal(res.status, 200, res.text)
      return res.body
    }
    const start = await inventory(a)
    assert.deepEqual(start, await count(a))
    const pet = await newPet()
    const order = (await place(pet.id)).body
    assert.deepEqual(await inventory(b), { ...start, pending: start.pending + 1 })
    await close(order.id, 'complete', { server: b })
    assert.deepEqual(await inventory(a), { ...start, sold: start.sold + 1 })
    const other = (await place((await newPet()).id)).body
    await close(other.id, 'cancel', { server: b })
    assert.deepEqual(await inventory(a), { ...start, sold: start.sold + 1, available: start.available + 1 })
    assert.deepEqual(await inventory(b), await count(b))
  })

  it('shows each change in the very next list call on the other instance, cached pages included', async () => {
    const pet = await newPet()
    for (const server of [a, b]) {
      assert.equal(await listedStatus(pet.id, server), 'available') // cached now
      assert.ok(await listedUnder('available', pet.id, server))
    }
    const order = (await place(pet.id, { server: a })).body
    assert.equal(await listedStatus(pet.id, b), 'pending')
    assert.ok(await listedUnder('pending', pet.id, b))
    assert.ok(!(await listedUnder('available', pet.id, b)))
    assert.equal((await b.request<Pet>(`/v1/pets/${pet.id}`, { key })).body.status, 'pending')
    await close(order.id, 'cancel', { server: b })
    assert.equal(await listedStatus(pet.id, a), 'available')
    const second = (await place(pet.id, { server: b })).body
    assert.equal(await listedStatus(pet.id, a), 'pending')
    await close(second.id, 'complete', { server: a })
    assert.equal(await listedStatus(pet.id, b), 'sold')
    assert.ok(await listedUnder('sold', pet.id, b))
  })

  it('gives exactly one 201 among 24 concurrent reservations of one pet across two instances; the rest 409 pet_unavailable', async () => {
    for (let round = 0; round < 3; round++) {
      const pet = await newPet()
      const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => place(pet.id, { server: i % 2 ? a : b })))
      const created = answers.filter((res) => res.status === 201)
      assert.equal(created.length, 1, answers.map((res) => res.status).join(' '))
      for (const res of answers) if (res.status !== 201) assert.equal(res.body.code, 'pet_unavailable', res.text)
      assert.equal(await listedStatus(pet.id, b), 'pending')
      const placed = await a.request<Order[]>('/v1/store/orders?status=placed&limit=100', { key })
      assert.equal(placed.body.filter((o) => o.petId === pet.id).length, 1)
    }
  })

  it('closes an order exactly once among 24 concurrent completions and cancellations across two instances', async () => {
    for (let round = 0; round < 3; round++) {
      const pet = await newPet()
      const order = (await place(pet.id)).body
      const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => close(order.id, i % 3 ? 'cancel' : 'complete', { server: i % 2 ? a : b })))
      const won = answers.filter((res) => res.status === 200)
      assert.equal(won.length, 1, answers.map((res) => res.status).join(' '))
      for (const res of answers) if (res.status !== 200) assert.equal(res.body.code, 'order_closed', res.text)
      const expected = won[0]!.body.status === 'completed' ? 'sold' : 'available'
      assert.equal(await listedStatus(pet.id, a), expected)
      assert.deepEqual((await b.request(`/v1/store/orders/${order.id}`, { key })).body, won[0]!.body)
    }
  })

  it('gives one 201 and one close among racing requests to two server processes on the same database (as PETSTORE_WORKERS)', async () => {
    const processes: ServerProcess[] = []
    try {
      for (let i = 0; i < 2; i++) processes.push(await spawnServer({ DATABASE_URL: a.config.databaseUrl, LOG_LEVEL: 'info' }))
      const post = async (url: string, path: string, body?: unknown) => {
        const res = await fetch(url + path, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        return { status: res.status, body: (await res.json()) as Order & Partial<Omit<ErrorBody, 'status'>> }
      }
      const urls = processes.map((p) => p.url)
      const pet = await newPet()
      const placed = await Promise.all(Array.from({ length: 24 }, (_, i) => post(urls[i % 2]!, '/v1/store/orders', { petId: pet.id })))
      const won = placed.filter((res) => res.status === 201)
      assert.equal(won.length, 1, placed.map((res) => res.status).join(' '))
      assert.ok(placed.every((res) => res.status === 201 || res.body.code === 'pet_unavailable'))
      const list = async (url: string) => {
        const res = await fetch(`${url}/v1/pets?limit=1${from(pet.id)}`, { headers: { authorization: `Bearer ${key}` } })
        assert.equal(res.status, 200)
        return ((await res.json()) as Pet[])[0]?.status
      }
      assert.equal(await list(urls[1]!), 'pending')
      const closed = await Promise.all(Array.from({ length: 24 }, (_, i) => post(urls[i % 2]!, `/v1/store/orders/${won[0]!.body.id}/${i % 3 ? 'cancel' : 'complete'}`)))
      const closedOnce = closed.filter((res) => res.status === 200)
      assert.equal(closedOnce.length, 1, closed.map((res) => res.status).join(' '))
      assert.ok(closed.every((res) => res.status === 200 || res.body.code === 'order_closed'))
      assert.equal(await list(urls[0]!), closedOnce[0]!.body.status === 'completed' ? 'sold' : 'available')
    } finally {
      for (const p of processes) {
        p.child.kill('SIGTERM')
        await p.exited
      }
    }
  })

  it('replays a reservation retried with its Idempotency-Key, spends no key on a 409, and refuses the key with another pet', async () => {
    const pet = await newPet()
    const idem = randomUUID()
    const first = await place(pet.id, { idempotencyKey: idem })
    assert.equal(first.status, 201)
    const retry = await place(pet.id, { server: b, idempotencyKey: idem })
    assert.equal(retry.status, 201)
    assert.equal(retry.headers.get('idempotent-replayed'), 'true')
    assert.deepEqual(retry.body, first.body)
    assert.equal(retry.headers.get('location'), first.headers.get('location'))
    const reused = await place((await newPet()).id, { idempotencyKey: idem })
    assert.equal(reused.status, 422)
    assert.equal(reused.body.code, 'idempotency_key_reused')

    const taken = await newPet('sold')
    const refused = randomUUID()
    assert.equal((await place(taken.id, { idempotencyKey: refused })).status, 409)
    assert.equal((await place(taken.id, { idempotencyKey: refused })).headers.get('idempotent-replayed'), null, 'the 409 was not stored')
    // A key used for createPet is another request here, never a replay of the pet.
    const petKey = randomUUID()
    await a.request('/v1/pets', { method: 'POST', key, json: { name: 'Keyed', categoryId: 1 }, headers: { 'idempotency-key': petKey } })
    assert.equal((await place((await newPet()).id, { idempotencyKey: petKey })).status, 422)
  })

  it('gives one order to 20 concurrent reservations sharing one Idempotency-Key: each answer is that 201 or 409', async () => {
    const pet = await newPet()
    const idem = randomUUID()
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => place(pet.id, { server: i % 2 ? a : b, idempotencyKey: idem })))
    const ids = new Set(answers.filter((res) => res.status === 201).map((res) => res.body.id))
    assert.equal(ids.size, 1)
    for (const res of answers) if (res.status !== 201) assert.ok(['idempotency_key_in_use', 'pet_unavailable'].includes(res.body.code!), res.text)
  })

  it('validates bodies and ids: 400 with the Error body', async () => {
    for (const json of [{}, { petId: '1' }, { petId: 0 }, { petId: 1, extra: true }]) {
      const res = await a.request<ErrorBody>('/v1/store/orders', { method: 'POST', key, json })
      assert.equal(res.status, 400, JSON.stringify(json))
      assert.deepEqual(Object.keys(res.body).slice(0, 3), ['code', 'message', 'status'])
    }
    for (const path of ['/v1/store/orders/abc', '/v1/store/orders/0/complete', '/v1/store/orders/-1/cancel']) {
      const res = await a.request<ErrorBody>(path, { method: path.endsWith('abc') ? 'GET' : 'POST', key })
      assert.equal(res.status, 400, path)
      assert.equal(res.body.code, 'invalid_parameter')
    }
  })

  it('enforces one open order per pet in the database itself (the partial unique index)', async () => {
    const pet = await newPet()
    await place(pet.id)
    const handle = openDatabase(a.config.databaseUrl)
    try {
      const row = { pet_id: pet.id, account_id: 1, status: 'placed', placed_at: 1, closed_at: null }
      await assert.rejects(handle.db.insertInto('orders').values(row).execute(), 'a second placed order for the pet')
      await handle.db.insertInto('orders').values({ ...row, status: 'cancelled', closed_at: 2 }).execute() // closed ones are not limited
      const { rows } = await sql<{ n: number }>`select count(*) as n from orders where pet_id = ${pet.id} and status = 'placed'`.execute(handle.db)
      assert.equal(Number(rows[0]!.n), 1)
    } finally {
      await handle.db.destroy()
    }
  })

  it('keeps an open order to a pet that exists: a pet with an open order cannot be deleted, and a deleted pet cannot be reserved', async () => {
    const pet = await newPet()
    const order = (await place(pet.id)).body
    const refused = await a.request<ErrorBody>(`/v1/pets/${pet.id}`, { method: 'DELETE', key })
    assert.equal(refused.status, 409)
    assert.equal(refused.body.code, 'pet_in_order')
    assert.equal((await close(order.id, 'cancel')).status, 200)
    assert.equal((await a.request(`/v1/pets/${pet.id}`, { method: 'DELETE', key })).status, 204)
    assert.equal((await place(pet.id)).status, 404)
    const handle = openDatabase(a.config.databaseUrl)
    try {
      const open = await handle.db.selectFrom('orders').select('id').where('status', '=', 'placed').where('pet_id', 'not in', handle.db.selectFrom('pets').select('id')).execute()
      assert.deepEqual(open, [], 'no open order without its pet')
    } finally {
      await handle.db.destroy()
    }
  })
})

describe('store operations: what every /v1 operation does', () => {
  let server: TestServer
  let key: string
  before(async () => {
    server = await startTestServer()
    key = await server.createKey('free')
  })
  after(() => server.close())

  const OPERATIONS: [method: string, path: string, allowed: string][] = [
    ['POST', '/v1/store/orders', 'GET, POST, HEAD'],
    ['GET', '/v1/store/orders', 'GET, POST, HEAD'],
    ['GET', '/v1/store/orders/1', 'GET, HEAD'],
    ['POST', '/v1/store/orders/1/complete', 'POST'],
    ['POST', '/v1/store/orders/1/cancel', 'POST'],
    ['GET', '/v1/store/inventory', 'GET, HEAD'],
  ]

  for (const [method, path, allowed] of OPERATIONS) {
    it(`${method} ${path}: 401 with WWW-Authenticate, rate-limit headers and the Error body without a key`, async () => {
      const res = await server.request<ErrorBody>(path, { method, json: method === 'POST' && path.endsWith('orders') ? { petId: 1 } : undefined })
      assert.equal(res.status, 401)
      assert.deepEqual(res.body, { code: 'unauthorized', message: res.body.message, status: 401 })
      assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/)
      for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit']) assert.ok(res.headers.has(name), name)
    })

    it(`${method} ${path}: rate-limit headers with a key`, async () => {
      const res = await server.request(path, { method, key, json: method === 'POST' && path.endsWith('orders') ? { petId: 1 } : undefined })
      assert.notEqual(res.status, 401)
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
      assert.equal(res.headers.get('x-ratelimit-limit'), '60')
      assert.ok(Number(res.headers.get('x-ratelimit-remaining')) < 60)
    })

    it(`${path}: 405 method_not_allowed with Allow for DELETE`, async () => {
      const res = await server.request<ErrorBody>(path, { method: 'DELETE', key })
      assert.equal(res.status, 405)
      assert.equal(res.headers.get('allow'), allowed)
      assert.deepEqual(res.body, { code: 'method_not_allowed', message: res.body.message, status: 405 })
    })
  }
})
