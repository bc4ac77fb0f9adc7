// Categories over HTTP on every store: the common ones a fresh database starts with,
// create/read/list/change/delete, names unique case-insensitively, a pet's categoryId
// naming an existing category (on create and PATCH), 409 category_in_use, the scopes,
// and the events.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { ErrorBody } from '../src/errors.js'
import type { Category } from '../src/schemas/category.js'
import type { Pet } from '../src/schemas/pet.js'
import type { Event } from '../src/webhooks/events.js'
import { UNLIMITED } from './helpers/keys.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

type Answer<T> = T & Partial<Omit<ErrorBody, 'status'>> & { details?: ErrorBody['details'] }

for (const store of STORES) describe(`categories (${store})`, () => {
  let server: TestServer
  let key: string
  before(async () => {
    server = await startTestServer({ store })
    key = await server.createKey('enterprise', UNLIMITED, { scopes: ['pets:read', 'pets:write', 'categories:read', 'categories:write', 'events:read'] })
  })
  after(() => server.close())

  const create = (json: unknown) => server.request<Answer<Category>>('/v1/categories', { method: 'POST', key, json })
  const patch = (id: number, json: unknown) =>
    server.request<Answer<Category>>(`/v1/categories/${id}`, { method: 'PATCH', key, headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify(json) })
  const remove = (id: number) => server.request<Answer<object>>(`/v1/categories/${id}`, { method: 'DELETE', key })
  const createPet = (json: unknown) => server.request<Answer<Pet>>('/v1/pets', { method: 'POST', key, json })

  it('lists the common categories a fresh database starts with, paged by cursor', async () => {
    const first = await server.request<Category[]>('/v1/categories?limit=4', { key })
    assert.equal(first.status, 200)
    assert.deepEqual(first.body.map((c) => c.name), ['Dogs', 'Cats', 'Birds', 'Rabbits'])
    assert.deepEqual(first.body[0], { id: 1, name: 'Dogs', description: '' })
    const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.get('link') ?? '')?.[1]
    assert.ok(next?.startsWith('/v1/categories?limit=4&cursor='), `a next link: ${String(next)}`)
    const second = await server.request<Category[]>(next!, { key })
    assert.deepEqual(second.body.slice(0, 3).map((c) => c.name), ['Reptiles', 'Fish', 'Other'])
    assert.equal((await server.request<ErrorBody>('/v1/categories?cursor=nonsense', { key })).body.code, 'invalid_parameter')
  })

  it('creates a category (201, Location), reads, changes and deletes it', async () => {
    const made = await create({ name: 'Ferrets', description: 'Small and curious' })
    assert.equal(made.status, 201)
    assert.deepEqual(made.body, { id: made.body.id, name: 'Ferrets', description: 'Small and curious' })
    assert.equal(made.headers.get('location'), `/v1/categories/${made.body.id}`)
    assert.deepEqual((await server.request<Category>(`/v1/categories/${made.body.id}`, { key })).body, made.body)
    const changed = await patch(made.body.id, { description: 'Small' })
    assert.deepEqual([changed.status, changed.body], [200, { ...made.body, description: 'Small' }])
    assert.equal((await remove(made.body.id)).status, 204)
    assert.equal((await server.request<ErrorBody>(`/v1/categories/${made.body.id}`, { key })).status, 404)
    assert.equal((await remove(made.body.id)).status, 404)
    assert.equal((await patch(made.body.id, { name: 'Ghost' })).status, 404)
  })

  it('spends no id on a refused name: the next category gets the next id, alike on every store', async () => {
    const first = await create({ name: 'Id spend one' })
    assert.equal((await create({ name: 'ID SPEND ONE' })).status, 409)
    const next = await create({ name: 'Id spend two' })
    assert.deepEqual([first.status, next.status], [201, 201])
    assert.equal(next.body.id, first.body.id + 1)
  })

  it('refuses a name another category has, in any case: 409 category_name_taken naming it', async () => {
    const taken = await create({ name: 'cATS' })
    assert.deepEqual([taken.status, taken.body.code], [409, 'category_name_taken'])
    assert.match(taken.body.message ?? '', /^The name "cATS" is taken by category 2 /, 'the name sent, and the category that has it')
    assert.equal((await patch(1, { name: 'CATS' })).body.code, 'category_name_taken')
    assert.equal((await patch(2, { name: 'CATS' })).status, 200, 'its own name in another case is no clash')
    await patch(2, { name: 'Cats' })
  })

  it('refuses a name that reads as another\'s: white space around or doubled, invisible characters, compatibility forms (409 naming it); and one that shows nothing (400)', async () => {
    for (const name of ['Dogs ', ' dogs', 'Do\u200bgs', 'Dogs\u00a0', '\ufeffDOGS', 'Ｄｏｇｓ', 'DOGS\u00ad']) {
      const taken = await create({ name })
      assert.deepEqual([taken.status, taken.body.code], [409, 'category_name_taken'], JSON.stringify(name))
      assert.match(taken.body.message ?? '', /is taken by category 1 /)
    }
    assert.equal((await patch(2, { name: 'Dogs\u2060' })).body.code, 'category_name_taken', 'a rename too')
    const made = await create({ name: 'Guinea  pigs' })
    assert.equal(made.status, 201)
    assert.equal(made.body.name, 'Guinea  pigs', 'stored as sent')
    assert.equal((await create({ name: 'guinea pigs' })).body.code, 'category_name_taken')
    for (const name of ['\u200b', '\u200b \u200d', '\ufe0f']) {
      const blank = await create({ name })
      assert.deepEqual([blank.status, blank.body.code], [400, 'invalid_field'], JSON.stringify(name))
      assert.match(blank.body.message ?? '', /"name" must show a character/)
      assert.equal((await patch(2, { name })).status, 400)
    }
    await remove(made.body.id!)
  })

  it('refuses bad bodies and ids with 400, never coercing', async () => {
    for (const body of [{}, { name: '' }, { name: '   ' }, { name: 'x'.repeat(101) }, { name: 7 }, { name: 'ok', id: 3 }, { name: 'ok', description: null }]) {
      const res = await create(body)
      assert.equal(res.status, 400, JSON.stringify(body))
      assert.ok(['invalid_body', 'invalid_field'].includes(res.body.code!), `${JSON.stringify(body)}: ${res.body.code}`)
    }
    assert.equal((await patch(1, {})).status, 400)
    assert.equal((await server.request<ErrorBody>('/v1/categories/abc', { key })).body.code, 'invalid_parameter')
  })

  it('refuses a pet whose categoryId names no category: 400 invalid_field naming the field, on create and PATCH', async () => {
    const refused = await createPet({ name: 'Nowhere', categoryId: 987654 })
    assert.deepEqual([refused.status, refused.body.code], [400, 'invalid_field'])
    assert.deepEqual(refused.body.details, [{ field: 'categoryId', message: 'no category with id 987654' }])
    const pet = (await createPet({ name: 'Somewhere', categoryId: 3 })).body
    const moved = await server.request<Answer<Pet>>(`/v1/pets/${pet.id}`, { method: 'PATCH', key, json: { categoryId: 987654 } })
    assert.deepEqual([moved.status, moved.body.code, moved.body.details?.[0]?.field], [400, 'invalid_field', 'categoryId'])
    assert.equal((await server.request<Pet>(`/v1/pets/${pet.id}`, { key })).body.categoryId, 3, 'nothing changed')
    // With an Idempotency-Key, a refusal stores nothing: the same key then makes the pet once the category exists.
    const idem = { 'idempotency-key': `cat-${store}` }
    const ferrets = (await create({ name: 'Polecats' })).body
    const first = await server.request<Answer<Pet>>('/v1/pets', { method: 'POST', key, headers: idem, json: { name: 'Later', categoryId: ferrets.id + 1000 } })
    assert.equal(first.status, 400)
    assert.equal((await server.request<Answer<Pet>>('/v1/pets', { method: 'POST', key, headers: idem, json: { name: 'Later', categoryId: ferrets.id + 1000 } })).status, 400)
  })

  it('refuses to delete a category animals name (409 category_in_use), until none does', async () => {
    const lizards = (await create({ name: 'Geckos' })).body
    const pet = (await createPet({ name: 'Gex', categoryId: lizards.id })).body
    const refused = await remove(lizards.id)
    assert.deepEqual([refused.status, refused.body.code], [409, 'category_in_use'])
    assert.match(refused.body.message ?? '', new RegExp(`categoryId=${lizards.id}`))
    assert.equal((await server.request(`/v1/pets/${pet.id}`, { method: 'DELETE', key })).status, 204)
    assert.equal((await remove(lizards.id)).status, 204)
  })

  it('needs categories:read to read and categories:write to change, which the presets give as documented', async () => {
    const petsOnly = await server.createKey('enterprise', UNLIMITED, { scopes: ['pets:read', 'pets:write'] })
    const readOnly = await server.createKey('enterprise', UNLIMITED, { scopes: ['pets:read', 'categories:read'] })
    const denied = await server.request<ErrorBody>('/v1/categories', { key: petsOnly })
    assert.deepEqual([denied.status, denied.body.code], [403, 'insufficient_scope'])
    assert.equal((await server.request('/v1/categories', { key: readOnly })).status, 200)
    const write = await server.request<ErrorBody>('/v1/categories', { method: 'POST', key: readOnly, json: { name: 'Newts' } })
    assert.deepEqual([write.status, write.body.code], [403, 'insufficient_scope'])
    assert.match(write.headers.get('www-authenticate') ?? '', /scope="categories:write"/)
  })

  it('reports category.created, category.updated and category.deleted as events every account sees', async () => {
    const made = (await create({ name: 'Tortoises' })).body
    await patch(made.id, { description: 'Slow' })
    await remove(made.id)
    // Of another account; it reads category events with categories:read (events:read alone shows no data).
    const other = await server.createKey('free', {}, { scopes: ['events:read', 'categories:read'] })
    for (const [type, data] of [
      ['category.created', { id: made.id, name: 'Tortoises', description: '' }],
      ['category.updated', { id: made.id, name: 'Tortoises', description: 'Slow' }],
      ['category.deleted', { id: made.id, name: 'Tortoises', description: 'Slow' }],
    ] as const) {
      const events = (await server.request<Event[]>(`/v1/events?type=${type}`, { key: other })).body
      assert.deepEqual(events.find((e) => (e.data as { id?: number }).id === made.id)?.data, data, type)
    }
  })
})

for (const store of STORES) describe(`categories, as many as the service keeps (${store})`, () => {
  let server: TestServer
  let key: string
  before(async () => {
    // A fresh database holds the 7 common categories: room for 3 more.
    server = await startTestServer({ store, env: { PETSTORE_MAX_CATEGORIES: '10' } })
    key = await server.createKey('enterprise', UNLIMITED, { scopes: ['categories:read', 'categories:write'] })
  })
  after(() => server.close())

  const create = (name: string) => server.request<Answer<Category>>('/v1/categories', { method: 'POST', key, json: { name } })

  it('refuses one more than PETSTORE_MAX_CATEGORIES with 409 category_limit_reached, concurrent creates included, and takes one again once one is deleted', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => create(`Kind ${i}`)))
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [201, 201, 201, 409, 409, 409])
    const refused = answers.find((answer) => answer.status === 409)!
    assert.equal(refused.body.code, 'category_limit_reached')
    assert.match(refused.body.message ?? '', /keeps at most 10 categories/)
    const all = await server.request<Category[]>('/v1/categories?limit=100', { key })
    assert.equal(all.body.length, 10)
    // Full, a name held is still told so, naming its category (a retried create learns its id).
    const taken = await create('Dogs')
    assert.deepEqual([taken.status, taken.body.code], [409, 'category_name_taken'])
    assert.match(taken.body.message ?? '', /taken by category 1 /)
    const made = answers.find((answer) => answer.status === 201)!.body
    assert.equal((await server.request(`/v1/categories/${made.id}`, { method: 'DELETE', key })).status, 204)
    assert.equal((await create('Kind again')).status, 201)
  })
})
