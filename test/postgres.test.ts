// PostgreSQL-only behaviour: losing connections, concurrent migrations, batched creates.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pg from 'pg'
import { migrate } from '../src/db/database.js'
import { openDatabase } from './helpers/database.js'
import { migrationProvider } from '../src/db/migrations/index.js'
import { openStore } from '../src/db/open-store.js'
import type { Pet, PetStatus } from '../src/schemas/pet.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { createTestDatabase, needs, POSTGRES_ADMIN_URL } from './helpers/services.js'
import { insertPet } from './helpers/pets.js'

describe('PostgreSQL store', async () => {
  if (!(await needs('postgres', 'PostgreSQL store'))) return
  let server: TestServer
  let key: string
  before(async () => {
    server = await startTestServer({ store: 'postgres' })
    key = await server.createKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 })
  })
  after(() => server.close())

  it('answers 503 service_unavailable, never a 500, when its connections are terminated, and recovers by itself', async () => {
    for (let i = 0; i < 5; i++) assert.equal((await server.request('/v1/pets', { key })).status, 200)
    const database = new URL(server.config.databaseUrl).pathname.slice(1)
    const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL })
    await admin.connect()
    const { rowCount } = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [
      database,
    ])
    await admin.end()
    assert.ok((rowCount ?? 0) > 0, 'the pool had connections to terminate')

    const statuses: number[] = []
    for (let i = 0; i < 20; i++) {
      const res = await server.request('/v1/pets', { key })
      statuses.push(res.status)
      if (res.status === 503) {
        assert.deepEqual(Object.keys(res.body as object), ['code', 'message', 'status'])
        assert.equal((res.body as { code: string }).code, 'service_unavailable')
        assert.equal(res.headers.get('retry-after'), '1')
      } else assert.equal(res.status, 200, res.text)
    }
    assert.deepEqual(statuses.slice(-5), [200, 200, 200, 200, 200], `recovered: ${statuses.join(' ')}`)
    // Writes work again too.
    assert.equal((await server.request('/v1/pets', { method: 'POST', key, json: { name: 'After', categoryId: 1 } })).status, 201)
  })

  it('gives concurrent creates distinct, increasing ids', async () => {
    const created = await Promise.all(
      Array.from({ length: 50 }, (_, i) => server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: `c${i}`, categoryId: 1 } })),
    )
    const ids = created.map((r) => r.body.id)
    assert.equal(new Set(ids).size, 50)
    const listed = (await server.request<Pet[]>('/v1/pets?limit=100', { key })).body.map((p) => p.id)
    assert.deepEqual(listed, [...listed].sort((a, b) => a - b))
  })

  it('answers each concurrent create with its own pet, committed in shared multi-row INSERTs', async () => {
    const names = Array.from({ length: 60 }, (_, i) => `batch-${i}`)
    const created = await Promise.all(names.map((name, i) => server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name, categoryId: 1 + (i % 7) } })))
    created.forEach((res, i) => {
      assert.equal(res.status, 201, res.text)
      assert.deepEqual(res.body, { id: res.body.id, name: names[i], categoryId: 1 + (i % 7), status: 'available' })
      assert.equal(res.headers.get('location'), `/v1/pets/${res.body.id}`)
    })
    // Rows written by one transaction share xmin: fewer transactions than creates means batches.
    const rows = await adminQuery<{ transactions: string }>(
      server.config.databaseUrl,
      'select count(distinct xmin::text) as transactions from pets where id = any($1::bigint[])',
      [created.map((res) => res.body.id)],
    )
    assert.ok(Number(rows[0]!.transactions) < names.length, `${rows[0]!.transactions} transactions for ${names.length} creates`)
  })

  it('keeps its connections open while idle, so that the first requests after a quiet spell find them', async () => {
    // pg-pool closes a connection idle for idleTimeoutMillis (10 s by default) while
    // it holds more than `min`: a short timeout proves they stay without waiting 10 s.
    const IDLE_TIMEOUT_MS = 100
    const database = await createTestDatabase()
    const store = await openStore(database.url, { idleTimeoutMs: IDLE_TIMEOUT_MS })
    try {
      const name = new URL(database.url).pathname.slice(1)
      const backends = async () =>
        (await adminQuery<{ pid: number }>(POSTGRES_ADMIN_URL, 'select pid from pg_stat_activity where datname = $1 order by pid', [name])).map((row) => row.pid)
      // Distinct reads in one turn, so that several connections are in use at once.
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.pets.find(i + 1)))
      const before = await backends()
      assert.ok(before.length > 1, `${before.length} connections open`)
      await new Promise((resolve) => setTimeout(resolve, IDLE_TIMEOUT_MS * 5))
      assert.deepEqual(await backends(), before)
      await store.pets.list({ afterId: 0, limit: 5 })
      assert.deepEqual(await backends(), before, 'the query after the quiet spell used a connection already open')
    } finally {
      await store.close()
      await database.drop()
    }
  })

  it('migrates safely when two processes start at once on a fresh database', async () => {
    const database = await createTestDatabase()
    try {
      const handles = [openDatabase(database.url), openDatabase(database.url)]
      const applied = await Promise.all(handles.map((h) => migrate(h)))
      const all = Object.keys(await migrationProvider('postgres').getMigrations())
      assert.deepEqual(applied.flat().sort(), all.sort(), 'each migration applied exactly once')
      await Promise.all(handles.map((h) => h.db.destroy()))
    } finally {
      await database.drop()
    }
  })
})

describe('PostgreSQL pets store: the creates of one turn', async () => {
  if (!(await needs('postgres', 'PostgreSQL pets store'))) return

  it('go in one transaction, each resolved with its own pet, ids increasing in the order asked', async () => {
    const database = await createTestDatabase()
    const store = await openStore(database.url)
    try {
      const asked = Array.from({ length: 25 }, (_, i) => ({ name: `turn-${i}`, categoryId: 1 + (i % 7), status: (['available', 'pending', 'sold'] as const)[i % 3] }))
      const pets = await Promise.all(asked.map((pet) => insertPet(store.pets, pet, 1_700_000_000_000)))
      assert.deepEqual(
        pets.map(({ id: _id, ...pet }) => pet),
        asked,
      )
      const ids = pets.map((pet) => pet.id)
      assert.deepEqual(ids, [...ids].sort((a, b) => a - b))
      assert.equal(new Set(ids).size, ids.length)
      const [row] = await adminQuery<{ transactions: string; rows: string }>(
        database.url,
        'select count(distinct xmin::text) as transactions, count(*) as rows from pets',
      )
      assert.deepEqual(row, { transactions: '1', rows: String(asked.length) })
    } finally {
      await store.close()
      await database.drop()
    }
  })
})

describe('PostgreSQL orders: the reservations of one turn', async () => {
  if (!(await needs('postgres', 'PostgreSQL orders'))) return
  let database: Awaited<ReturnType<typeof createTestDatabase>>
  let store: Awaited<ReturnType<typeof openStore>>
  before(async () => {
    database = await createTestDatabase()
    store = await openStore(database.url)
  })
  after(async () => {
    await store?.close()
    await database?.drop()
  })
  const newPet = (status: PetStatus = 'available') => insertPet(store.pets, { name: 'Ordered', categoryId: 1, status }, 1_700_000_000_000)

  it('go in one statement: the first request for a pet gets it, the rest are refused as each alone would be, order ids in arrival order', async () => {
    const [first, second, sold] = [await newPet(), await newPet(), await newPet('sold')]
    const missing = 2 ** 40
    const asked = [
      [first.id, 1],
      [second.id, 2],
      [first.id, 3],
      [sold.id, 1],
      [missing, 1],
      [second.id, 4],
    ] as const
    const results = await Promise.all(asked.map(([petId, accountId]) => store.orders.place(petId, accountId, 1_700_000_000_000)))
    assert.deepEqual(
      results.map((r) => (r.outcome === 'placed' ? [r.outcome, r.order.petId] : [r.outcome])),
      [['placed', first.id], ['placed', second.id], ['pet_unavailable'], ['pet_unavailable'], ['no_such_pet'], ['pet_unavailable']],
    )
    const [a, b] = results.flatMap((r) => (r.outcome === 'placed' ? [r.order] : []))
    assert.ok(a!.id < b!.id, 'order ids follow arrival')
    assert.deepEqual(
      (await adminQuery<{ account_id: number }>(database.url, 'select account_id from orders order by id')).map((row) => Number(row.account_id)),
      [1, 2],
      'each order belongs to the request that got the pet',
    )
    const [row] = await adminQuery<{ transactions: string }>(
      database.url,
      'select count(distinct xmin::text) as transactions from (select xmin from orders union all select xmin from pets where id = any($1::bigint[])) written',
      [[first.id, second.id]],
    )
    assert.equal(row!.transactions, '1', 'both orders and both pets in one transaction')
  })

  it('still refuses only the one request whose pet has an open order, when that fails the shared statement', async () => {
    const taken = await newPet()
    assert.equal((await store.orders.place(taken.id, 1, 1)).outcome, 'placed')
    // By hand: the pet looks available although its order is still open.
    await adminQuery(database.url, "update pets set status = 'available' where id = $1", [taken.id])
    const free = await newPet()
    const [refused, placed] = await Promise.all([store.orders.place(taken.id, 2, 2), store.orders.place(free.id, 2, 2)])
    assert.deepEqual(refused, { outcome: 'pet_unavailable', status: 'pending' }, 'orders_one_open_per_pet refuses it')
    assert.equal(placed.outcome, 'placed', 'the other reservation of the turn goes through')
  })
})

async function adminQuery<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<T>(text, values)).rows
  } finally {
    await client.end()
  }
}
