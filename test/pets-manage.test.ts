// Managing pets: PATCH /v1/pets/{petId} (a JSON Merge Patch, with ETag and If-Match)
// and DELETE /v1/pets/{petId}, on every store, with a second instance on the same
// database: lists and the inventory show each change at once, an open order holds
// its pet, and of a status change racing a reservation exactly one wins.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { ErrorBody } from '../src/errors.js'
import type { Inventory, Order } from '../src/schemas/order.js'
import type { Pet, PetStatus } from '../src/schemas/pet.js'
import { encodeCursor } from '../src/routes/v1/cursor.js'
import { UNLIMITED } from './helpers/keys.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

type Answer<T> = T & Partial<Omit<ErrorBody, 'status'>>

for (const store of STORES) describe(`managing pets (${store})`, () => {
  let a: TestServer
  let b: TestServer
  let key: string
  before(async () => {
    a = await startTestServer({ store })
    b = await startTestServer({ env: { DATABASE_URL: a.config.databaseUrl } })
    key = await a.createKey('enterprise', UNLIMITED)
  })
  after(async () => {
    await b.close()
    await a.close()
  })

  const newPet = async (status: PetStatus = 'available') =>
    (await a.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: `pet ${randomUUID()}`, categoryId: 1, status } })).body
  const patch = (id: number, body: unknown, { server = a, headers = {} as Record<string, string>, type = 'application/merge-patch+json' } = {}) =>
    server.request<Answer<Pet>>(`/v1/pets/${id}`, { method: 'PATCH', key, headers: { 'content-type': type, ...headers }, body: JSON.stringify(body) })
  const remove = (id: number, headers: Record<string, string> = {}, server = a) => server.request<Answer<object>>(`/v1/pets/${id}`, { method: 'DELETE', key, headers })
  const place = (petId: number) => a.request<Answer<Order>>('/v1/store/orders', { method: 'POST', key, json: { petId } })
  /** The pet as the list of another instance shows it, right after the change. */
  const listed = async (id: number): Promise<Pet | undefined> => {
    const res = await b.request<Pet[]>(`/v1/pets?limit=1${id > 1 ? `&cursor=${encodeCursor(id - 1)}` : ''}`, { key })
    return res.body[0]?.id === id ? res.body[0] : undefined
  }
  const inventory = async () => (await b.request<Inventory>('/v1/store/inventory', { key })).body

  it('changes the fields given and keeps the others: 200 with the pet and its ETag, shown by the next list on another instance', async () => {
    const pet = await newPet()
    const res = await patch(pet.id, { name: 'Renamed' })
    assert.equal(res.status, 200, res.text)
    assert.deepEqual(res.body, { ...pet, name: 'Renamed' })
    assert.match(res.headers.get('etag')!, /^"[A-Za-z0-9_-]+"$/)
    assert.deepEqual(await listed(pet.id), { ...pet, name: 'Renamed' })
    const again = await patch(pet.id, { name: 'Renamed', categoryId: 7 }, { type: 'application/json' })
    assert.equal(again.status, 200, 'application/json is accepted too')
    assert.deepEqual(again.body, { ...pet, name: 'Renamed', categoryId: 7 })
    assert.notEqual(again.headers.get('etag'), res.headers.get('etag'), 'another version, another ETag')
  })

  it('makes a pet created pending, with no order, available again, and the inventory follows', async () => {
    const pet = await newPet('pending')
    const before = await inventory()
    const res = await patch(pet.id, { status: 'available' })
    assert.equal(res.status, 200, res.text)
    assert.equal((await listed(pet.id))?.status, 'available')
    assert.deepEqual(await inventory(), { ...before, pending: before.pending - 1, available: before.available + 1 })
    assert.equal((await place(pet.id)).status, 201, 'and it can be reserved')
  })

  it('refuses a status change while an open order holds the pet (409 pet_in_order naming the order), but not a new name', async () => {
    const pet = await newPet()
    const order = (await place(pet.id)).body
    const res = await patch(pet.id, { status: 'available' })
    assert.equal(res.status, 409)
    assert.equal(res.body.code, 'pet_in_order')
    assert.match(res.body.message!, new RegExp(`open order ${order.id}\\b`))
    assert.equal((await listed(pet.id))?.status, 'pending', 'unchanged')
    assert.equal((await patch(pet.id, { status: 'pending' })).status, 200, 'the status it has is no change')
    assert.equal((await patch(pet.id, { name: 'Still reserved' })).status, 200)
    const gone = await remove(pet.id)
    assert.equal(gone.status, 409)
    assert.equal(gone.body.code, 'pet_in_order')
    assert.equal((await a.request(`/v1/store/orders/${order.id}/cancel`, { method: 'POST', key })).status, 200)
    assert.equal((await patch(pet.id, { status: 'sold' })).status, 200, 'once the order is closed, it can change')
  })

  it("refuses a change under another account's order without naming that order", async () => {
    const pet = await newPet()
    const order = (await place(pet.id)).body
    const other = await a.createKey('enterprise', UNLIMITED)
    const answers = [
      await a.request<Answer<Pet>>(`/v1/pets/${pet.id}`, { method: 'PATCH', key: other, headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ status: 'sold' }) }),
      await a.request<Answer<object>>(`/v1/pets/${pet.id}`, { method: 'DELETE', key: other }),
    ]
    for (const res of answers) {
      assert.equal(res.status, 409, res.text)
      assert.equal(res.body.code, 'pet_in_order')
      assert.match(res.body.message!, /another account/)
      assert.doesNotMatch(res.text.replace(`Pet ${pet.id}`, ''), new RegExp(`\\b${order.id}\\b`), 'the order id is not told')
    }
    assert.equal((await a.request(`/v1/store/orders/${order.id}/cancel`, { method: 'POST', key })).status, 200)
  })

  it('refuses a name that shows nothing (white space and invisible characters alone) on a create and a change; one that shows anything stands as sent', async () => {
    for (const name of ['\u3000\u200b', '\u200b', '\u2060\u00a0', '\ufeff\u180e', '\u2800', '\u0301\u0301', '\u3164']) {
      const made = await a.request<Answer<Pet>>('/v1/pets', { method: 'POST', key, json: { name, categoryId: 1 } })
      assert.equal(made.status, 400, JSON.stringify(name))
      assert.equal(made.body.code, 'invalid_field')
      assert.match(made.body.message ?? '', /"name" must show a character/)
    }
    const pet = await newPet()
    const changed = await patch(pet.id, { name: '\u200b\u200b' })
    assert.equal(changed.status, 400)
    assert.equal(changed.body.code, 'invalid_field')
    for (const name of ['\u200bRex', 'Ｒｅｘ', 'É', 'ルナ']) {
      const made = await a.request<Answer<Pet>>('/v1/pets', { method: 'POST', key, json: { name, categoryId: 1 } })
      assert.equal(made.status, 201, JSON.stringify(name))
      assert.equal(made.body.name, name)
    }
  })

  it('refuses bodies that are not a patch of a pet: empty, unknown fields, null, wrong types, another media type', async () => {
    const pet = await newPet()
    for (const body of [{}, { id: 5 }, { name: null }, { status: 'lost' }, { categoryId: '3' }, { name: '' }, []]) {
      const res = await patch(pet.id, body)
      assert.equal(res.status, 400, JSON.stringify(body))
      assert.ok(['invalid_body', 'invalid_field'].includes(res.body.code!), res.text)
    }
    assert.equal((await patch(pet.id, {})).body.message, 'the body must hold at least 1 field to change', 'said for people, not as the validator says it')
    const plain = await patch(pet.id, { name: 'x' }, { type: 'text/plain' })
    assert.equal(plain.status, 415)
    const create = await a.request('/v1/pets', { method: 'POST', key, headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ name: 'x', categoryId: 1 }) })
    assert.equal(create.status, 415, 'a create is not a merge patch')
    assert.deepEqual(await listed(pet.id), pet, 'nothing changed')
  })

  it('answers 404 for a pet that does not exist', async () => {
    assert.equal((await patch(2 ** 40, { name: 'Nobody' })).status, 404)
    assert.equal((await remove(2 ** 40)).status, 404)
  })

  it('changes a pet only if If-Match names its current ETag (412 otherwise, nothing written); * matches any; a weak tag never does', async () => {
    const pet = await newPet()
    const read = await a.request<Pet>(`/v1/pets/${pet.id}`, { key })
    const etag = read.headers.get('etag')!
    assert.match(etag, /^"/, 'the deprecated getPet carries the ETag too')
    const first = await patch(pet.id, { name: 'First' }, { headers: { 'if-match': etag } })
    assert.equal(first.status, 200, first.text)
    const stale = await patch(pet.id, { name: 'Second' }, { headers: { 'if-match': etag } })
    assert.equal(stale.status, 412)
    assert.equal(stale.body.code, 'precondition_failed')
    assert.ok(stale.body.message!.includes(first.headers.get('etag')!), 'the message gives the current ETag')
    assert.equal((await listed(pet.id))?.name, 'First', 'the stale change was not written')
    assert.equal((await patch(pet.id, { name: 'Third' }, { headers: { 'if-match': `"nope", ${first.headers.get('etag')}` } })).status, 200, 'one of a list')
    assert.equal((await patch(pet.id, { name: 'Fourth' }, { headers: { 'if-match': '*' } })).status, 200)
    const current = (await a.request<Pet>(`/v1/pets/${pet.id}`, { key })).headers.get('etag')!
    assert.equal((await patch(pet.id, { name: 'Weak' }, { headers: { 'if-match': `W/${current}` } })).status, 412, 'strong comparison')
    assert.equal((await patch(pet.id, { name: 'Bad' }, { headers: { 'if-match': 'not-quoted' } })).status, 400)
    assert.equal((await remove(pet.id, { 'if-match': etag })).status, 412, 'DELETE honours If-Match too')
    assert.equal((await remove(pet.id, { 'if-match': current })).status, 204)
  })

  it('deletes a pet: 204; it leaves lists, the inventory and getPet; again 404; its orders keep its petId; it cannot be reserved', async () => {
    const pet = await newPet()
    const order = (await place(pet.id)).body
    assert.equal((await a.request(`/v1/store/orders/${order.id}/complete`, { method: 'POST', key })).status, 200)
    const before = await inventory()
    const res = await remove(pet.id)
    assert.equal(res.status, 204)
    assert.equal(res.text, '')
    assert.equal(await listed(pet.id), undefined)
    assert.deepEqual(await inventory(), { ...before, sold: before.sold - 1 })
    assert.equal((await b.request(`/v1/pets/${pet.id}`, { key })).status, 404)
    assert.equal((await remove(pet.id)).status, 404, 'deleting again is a 404')
    assert.equal((await patch(pet.id, { name: 'Ghost' })).status, 404)
    const kept = await a.request<Order>(`/v1/store/orders/${order.id}`, { key })
    assert.equal(kept.status, 200)
    assert.equal(kept.body.petId, pet.id, 'the order keeps the petId of the pet it was for')
    assert.equal((await place(pet.id)).status, 404, 'a deleted pet cannot be reserved')
  })

  it('lets exactly one of a status change and a reservation racing for a pet win, on two instances', async () => {
    const pets = await Promise.all(Array.from({ length: 12 }, () => newPet()))
    const results = await Promise.all(
      pets.map(async (pet, i) => {
        const server = i % 2 ? a : b
        const [placed, changed] = await Promise.all([
          server.request<Answer<Order>>('/v1/store/orders', { method: 'POST', key, json: { petId: pet.id } }),
          patch(pet.id, { status: 'sold' }, { server: i % 2 ? b : a }),
        ])
        return { pet, placed: placed.status, changed: changed.status }
      }),
    )
    for (const { pet, placed, changed } of results) {
      const status = (await listed(pet.id))?.status
      if (placed === 201) {
        // The reservation came first: the pet is pending and the change was refused, or the change came first... and then the reservation could not succeed.
        assert.equal(changed, 409, `pet ${pet.id}: reserved, so its status could not change`)
        assert.equal(status, 'pending')
      } else {
        assert.equal(placed, 409, `pet ${pet.id}: sold first, so not reservable`)
        assert.equal(changed, 200)
        assert.equal(status, 'sold')
      }
    }
  })
})
