import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { encodeCursor } from '../src/routes/v1/cursor.js'
import type { Pet } from '../src/schemas/pet.js'
import { UNLIMITED } from './helpers/keys.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'
import { insertPet } from './helpers/pets.js'

for (const store of STORES) describe(`pets (${store})`, () => {
  let server: TestServer
  let key: string
  before(async () => {
    server = await startTestServer({ store })
    key = await server.createKey('enterprise', UNLIMITED)
  })
  after(() => server.close())

  const create = (json: unknown) => server.request<Pet>('/v1/pets', { method: 'POST', key, json })

  it('creates a pet: 201, the Pet with its id, and a Location header', async () => {
    const res = await create({ name: 'Rex', categoryId: 3, status: 'pending' })
    assert.equal(res.status, 201)
    assert.deepEqual(res.body, { id: res.body.id, name: 'Rex', categoryId: 3, status: 'pending' })
    assert.ok(Number.isSafeInteger(res.body.id) && res.body.id > 0)
    assert.equal(res.headers.get('location'), `/v1/pets/${res.body.id}`)
  })

  it('defaults status to available', async () => {
    const res = await create({ name: 'Tom', categoryId: 1 })
    assert.equal(res.status, 201)
    assert.equal(res.body.status, 'available')
  })

  it('assigns increasing ids', async () => {
    const a = await create({ name: 'A', categoryId: 1 })
    const b = await create({ name: 'B', categoryId: 1 })
    assert.ok(b.body.id > a.body.id)
  })

  it('accepts a 200-character name', async () => {
    const res = await create({ name: 'x'.repeat(200), categoryId: 7 })
    assert.equal(res.status, 201)
    assert.equal(res.body.name, 'x'.repeat(200))
  })

  it('answers concurrent creates with distinct ids, each listed and fetchable at once', async () => {
    const created = await Promise.all(Array.from({ length: 30 }, (_, i) => create({ name: `burst ${i}`, categoryId: 4, status: 'pending' })))
    assert.ok(created.every((res) => res.status === 201))
    const ids = created.map((res) => res.body.id)
    assert.equal(new Set(ids).size, ids.length)
    const listed = await server.request<Pet[]>(`/v1/pets?status=pending&limit=100&cursor=${encodeCursor(Math.min(...ids) - 1)}`, { key })
    for (const id of ids) assert.ok(listed.body.some((p) => p.id === id), `pet ${id} is listed`)
    for (const res of created) assert.deepEqual((await server.request<Pet>(`/v1/pets/${res.body.id}`, { key })).body, res.body)
  })

  it('fetches a created pet by id', async () => {
    const created = await create({ name: 'Fido', categoryId: 2, status: 'sold' })
    const res = await server.request<Pet>(`/v1/pets/${created.body.id}`, { key })
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, created.body)
  })

  it('answers 404 not_found for a pet that does not exist', async () => {
    const res = await server.request(`/v1/pets/999999999`, { key })
    assert.equal(res.status, 404)
    assert.deepEqual(res.body, { code: 'not_found', message: 'There is no pet with id 999999999.', status: 404 })
  })
})

for (const store of STORES) describe(`listing pets (${store})`, () => {
  let server: TestServer
  let key: string
  const ids: Record<string, number[]> = { available: [], pending: [], sold: [] }
  before(async () => {
    server = await startTestServer({ store })
    key = await server.createKey('enterprise', UNLIMITED)
    const statuses = ['available', 'pending', 'sold'] as const
    for (let i = 0; i < 45; i++) {
      const status = statuses[i % 3]!
      const res = await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: `pet ${i}`, categoryId: 1, status } })
      ids[status]!.push(res.body.id)
    }
  })
  after(() => server.close())

  const all = () => [...ids.available!, ...ids.pending!, ...ids.sold!].sort((a, b) => a - b)

  it('returns a bare array of 20 pets by default, in ascending id order', async () => {
    const res = await server.request<Pet[]>('/v1/pets', { key })
    assert.equal(res.status, 200)
    assert.ok(Array.isArray(res.body))
    assert.deepEqual(
      res.body.map((p) => p.id),
      all().slice(0, 20),
    )
  })

  it('honours limit=1, linking the next page', async () => {
    const res = await server.request<Pet[]>('/v1/pets?limit=1', { key })
    assert.deepEqual(
      res.body.map((p) => p.id),
      all().slice(0, 1),
    )
    assert.match(res.headers.get('link') ?? '', /rel="next"$/)
  })

  it('filters by status', async () => {
    const res = await server.request<Pet[]>('/v1/pets?status=sold&limit=100', { key })
    assert.deepEqual(
      res.body.map((p) => p.id),
      ids.sold,
    )
    assert.ok(res.body.every((p) => p.status === 'sold'))
  })

  it('links the next page with an opaque cursor while more pets match, and not after the last', async () => {
    const seen: number[] = []
    let path: string | undefined = '/v1/pets?status=pending&limit=4'
    let pages = 0
    while (path) {
      const res: { headers: Headers; body: Pet[] } = await server.request<Pet[]>(path, { key })
      seen.push(...res.body.map((p) => p.id))
      const link = res.headers.get('link')
      path = link ? /^<([^>]+)>; rel="next"$/.exec(link)?.[1] : undefined
      if (link) assert.match(link, /^<\/v1\/pets\?limit=4&status=pending&cursor=[A-Za-z0-9_-]+>; rel="next"$/)
      pages++
    }
    assert.deepEqual(seen, ids.pending)
    assert.equal(pages, Math.ceil(ids.pending!.length / 4))
  })

  it('sends no Link header when everything fits on one page', async () => {
    const res = await server.request('/v1/pets?limit=100', { key })
    assert.equal(res.headers.get('link'), null)
  })

  it('refuses unknown query parameters, naming them (test/unknown-parameters.test.ts covers every operation)', async () => {
    const res = await server.request<{ code: string; message: string }>('/v1/pets?limit=2&colour=brown', { key })
    assert.equal(res.status, 400)
    assert.equal(res.body.code, 'invalid_parameter')
    assert.match(res.body.message, /unknown parameter "colour"/)
  })

  it('answers a page asked for again (from memory on SQLite) with the same bytes and headers, as Fastify serializes pets', async () => {
    const path = '/v1/pets?status=available&limit=3'
    const first = await server.request<Pet[]>(path, { key })
    const again = await server.request<Pet[]>(path, { key })
    assert.equal(again.text, first.text)
    for (const name of ['content-type', 'content-length', 'link']) assert.equal(again.headers.get(name), first.headers.get(name), name)
    assert.equal(first.headers.get('content-type'), 'application/json; charset=utf-8')
    // Byte for byte what getPet's response serializer makes of each pet.
    const each = await Promise.all(first.body.map((pet) => server.request(`/v1/pets/${pet.id}`, { key })))
    assert.equal(first.text, `[${each.map((res) => res.text).join(',')}]`)
  })

  it('shows a pet created a moment ago in the very next list call', async () => {
    const created = await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: 'Newest', categoryId: 6, status: 'sold' } })
    const res = await server.request<Pet[]>('/v1/pets?status=sold&limit=100', { key })
    assert.equal(res.body.at(-1)?.id, created.body.id)
    ids.sold!.push(created.body.id)
  })

  // Last: it adds pets the tests above do not expect.
  it('answers limit=100 with exactly 100 pets and a link to the rest when more match', async () => {
    // Straight through the store, at once: 101 POSTs would only make the test slow.
    const added = await Promise.all(Array.from({ length: 120 - all().length }, (_, i) => insertPet(server.store.pets, { name: `bulk ${i}`, categoryId: 1 }, Date.now())))
    ids.available!.push(...added.map((pet) => pet.id))
    assert.equal(all().length, 120)
    const first = await server.request<Pet[]>('/v1/pets?limit=100', { key })
    assert.deepEqual(
      first.body.map((p) => p.id),
      all().slice(0, 100),
    )
    const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.get('link') ?? '')?.[1]
    assert.ok(next, 'a next link')
    const rest = await server.request<Pet[]>(next, { key })
    assert.deepEqual(
      rest.body.map((p) => p.id),
      all().slice(100),
    )
    assert.equal(rest.headers.get('link'), null)
  })
})
