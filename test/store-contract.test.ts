// The store's contracts (src/db/*-store.ts), one suite run over every backend, the
// way kysely loops its tests over DIALECTS: a third backend is a folder in src/db/
// and a line in DIALECTS. Each backend runs on a fresh database of its own; what the
// store committed is read back through a connection of the test's own.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { USAGE_OUTCOMES } from '../src/vocabulary/usage.js'
import { sql } from 'kysely'
import { ActingKeyRefused, type NewStoredApiKey, type StoredApiKey } from '../src/db/api-keys-store.js'
import { keyState, toApiKeyRecord } from '../src/api-keys/api-key-record.js'
import type { ClaimedDelivery } from '../src/db/delivery-queue.js'
import { ClaimLostError, type ClaimOptions, type IdempotencyScope } from '../src/db/idempotency-store.js'
import type { NewPet, Pet } from '../src/schemas/pet.js'
import { DIALECTS, storeForSuite } from './helpers/dialects.js'
import { needs } from './helpers/services.js'
import { insertPet } from './helpers/pets.js'

const NOW = Date.UTC(2026, 10, 23, 10)

for (const { dialect, create } of DIALECTS) {
  const NEW_KEY: NewStoredApiKey = { name: 'k', account: { name: 'a', plan: 'free', custom: null }, prefix: 'ps_test_Kkkk', hash: '', scopes: 'pets:read', expiresAt: null, disabledAt: null, createdBy: null }

describe(`store contract (${dialect})`, async () => {
    if (dialect === 'postgres' && !(await needs('postgres', 'the PostgreSQL store contract'))) return
    const suite = storeForSuite(create)

    const newPet = (pet: Partial<NewPet> = {}) => insertPet(suite.store.pets, { name: 'Rex', categoryId: 1, ...pet }, NOW)
    const committedStatus = async (petId: number) =>
      (await suite.other.db.selectFrom('pets').select('status').where('id', '=', petId).executeTakeFirst())?.status
    const openOrders = async (petId: number) =>
      (await suite.other.db.selectFrom('orders').select('id').where('pet_id', '=', petId).where('status', '=', 'placed').execute()).length
    const setStatusByHand = (petId: number, status: string) => sql`update pets set status = ${status} where id = ${petId}`.execute(suite.other.db)

    describe('pets', () => {
      it('inserts pets with distinct ids increasing in the order asked, each committed when it resolves', async () => {
        const asked = Array.from({ length: 25 }, (_, i) => ({ name: `pet ${i}`, categoryId: (i % 7) + 1, status: (['available', 'pending', 'sold'] as const)[i % 3] }))
        const pets = await Promise.all(asked.map((pet) => insertPet(suite.store.pets, pet, NOW)))
        assert.deepEqual(pets.map(({ id: _id, ...pet }) => pet), asked)
        const ids = pets.map((pet) => pet.id)
        assert.deepEqual(ids, [...ids].sort((a, b) => a - b))
        assert.equal(new Set(ids).size, ids.length)
        for (const pet of pets) assert.equal(await committedStatus(pet.id), pet.status)
      })

      it('fills in the status "available" when none is given', async () => {
        const pet = await newPet()
        assert.deepEqual(pet, { id: pet.id, name: 'Rex', categoryId: 1, status: 'available' })
      })

      it('fails only the bad insert of those asked together', async () => {
        const bad = { name: 'bad', categoryId: 1, status: 'lost' } as unknown as NewPet // breaks the CHECK constraint
        const results = await Promise.allSettled([newPet({ name: 'good 1' }), insertPet(suite.store.pets, bad, NOW), newPet({ name: 'good 2' })])
        assert.deepEqual(results.map((r) => r.status), dialect === 'sqlite' ? ['fulfilled', 'rejected', 'fulfilled'] : ['rejected', 'rejected', 'rejected'])
      })

      it('lists pets in ascending id order, by status, from a position, at most `limit`', async () => {
        const [a, b, c] = [await newPet({ status: 'sold' }), await newPet({ status: 'available' }), await newPet({ status: 'sold' })]
        const page = await suite.store.pets.list({ afterId: a.id - 1, limit: 2 })
        assert.deepEqual(page.pets, [a, b])
        const sold = await suite.store.pets.list({ statuses: ['sold'], afterId: a.id - 1, limit: 10 })
        assert.deepEqual(sold.pets.filter((pet) => pet.id <= c.id), [a, c])
        assert.deepEqual((await suite.store.pets.list({ afterId: c.id, limit: 10 })).pets, [])
      })

      it('hands out pages that cannot be changed', async () => {
        await newPet()
        const page = await suite.store.pets.list({ afterId: 0, limit: 3 })
        assert.ok(Object.isFrozen(page.pets) && page.pets.every((pet) => Object.isFrozen(pet)))
        assert.throws(() => {
          ;(page.pets as Pet[]).length = 1
        }, TypeError)
      })

      it('finds a pet by id, and nothing for an unknown id', async () => {
        const created = await newPet({ name: 'findable', categoryId: 6, status: 'pending' })
        assert.deepEqual(await suite.store.pets.find(created.id), created)
        assert.equal(await suite.store.pets.find(999_999_999), undefined)
      })

      it('never answers older than a commit made elsewhere before the call: list, find and inventory', async () => {
        const pet = await newPet()
        const before = await suite.store.pets.inventory()
        assert.equal((await suite.store.pets.list({ afterId: pet.id - 1, limit: 1 })).pets[0]?.status, 'available')
        await setStatusByHand(pet.id, 'sold')
        assert.equal((await suite.store.pets.list({ afterId: pet.id - 1, limit: 1 })).pets[0]?.status, 'sold')
        assert.equal((await suite.store.pets.find(pet.id))?.status, 'sold')
        assert.deepEqual(await suite.store.pets.inventory(), { ...before, available: before.available - 1, sold: before.sold + 1 })
        const { id } = await suite.other.db.insertInto('pets').values({ name: 'elsewhere', category_id: 4, status: 'pending', created_at: 1 }).returning('id').executeTakeFirstOrThrow()
        assert.equal((await suite.store.pets.list({ afterId: pet.id, limit: 1_000 })).pets.at(-1)?.id, id)
      })

      it('counts every pet by status, a status without pets as 0', async () => {
        const counted = await suite.other.db.selectFrom('pets').select(['status', (eb) => eb.fn.countAll().as('n')]).groupBy('status').execute()
        const expected = { available: 0, pending: 0, sold: 0 }
        for (const { status, n } of counted) expected[status as keyof typeof expected] = Number(n)
        assert.deepEqual(await suite.store.pets.inventory(), expected)
      })
    })

    describe('categories', () => {
      const events = async (type: string) =>
        (await suite.other.db.selectFrom('events').select(['type', 'data', 'account_id']).where('type', '=', type).orderBy('id').execute()).map((e) => ({ ...e, data: JSON.parse(e.data) as unknown }))

      it('starts a fresh database with the common categories, numbered from 1', async () => {
        const seeded = await suite.store.categories.list({ afterId: 0, limit: 7 })
        assert.deepEqual(seeded.map((c) => [c.id, c.name]), [[1, 'Dogs'], [2, 'Cats'], [3, 'Birds'], [4, 'Rabbits'], [5, 'Reptiles'], [6, 'Fish'], [7, 'Other']])
        assert.deepEqual(await events('category.created'), [], 'the seed is no event')
      })

      it('creates, reads, lists from a position, changes and removes a category, each with its event', async () => {
        const made = await suite.store.categories.insert({ name: 'Ferrets', description: 'Small and curious' }, NOW)
        assert.equal(made.outcome, 'written')
        const ferrets = (made as { category: { id: number; name: string; description: string } }).category
        assert.deepEqual(ferrets, { id: ferrets.id, name: 'Ferrets', description: 'Small and curious' })
        assert.ok(ferrets.id > 7)
        assert.deepEqual(await suite.store.categories.find(ferrets.id), ferrets)
        assert.deepEqual(await suite.store.categories.list({ afterId: ferrets.id - 1, limit: 5 }), [ferrets])
        const changed = await suite.store.categories.update(ferrets.id, { description: 'Small' })
        assert.deepEqual(changed, { outcome: 'written', category: { ...ferrets, description: 'Small' } })
        assert.deepEqual(await suite.store.categories.remove(ferrets.id), { outcome: 'removed' })
        assert.equal(await suite.store.categories.find(ferrets.id), undefined)
        assert.deepEqual(await suite.store.categories.remove(ferrets.id), { outcome: 'no_such_category' })
        assert.deepEqual(await suite.store.categories.update(ferrets.id, { name: 'Gone' }), { outcome: 'no_such_category' })
        const data = { id: ferrets.id, name: 'Ferrets', description: 'Small' }
        assert.deepEqual((await events('category.created')).map((e) => e.account_id), [null])
        assert.deepEqual((await events('category.updated')).at(-1)?.data, data)
        assert.deepEqual((await events('category.deleted')).at(-1)?.data, data)
      })

      it('refuses a name another category has, compared case-insensitively (Unicode too)', async () => {
        assert.deepEqual(await suite.store.categories.insert({ name: 'cATS' }, NOW), { outcome: 'name_taken', categoryId: 2 })
        const strasse = await suite.store.categories.insert({ name: 'Straße' }, NOW)
        assert.equal(strasse.outcome, 'written')
        assert.equal((await suite.store.categories.insert({ name: 'STRASSE' }, NOW)).outcome, 'name_taken')
        assert.deepEqual(await suite.store.categories.update(1, { name: 'CATS' }), { outcome: 'name_taken', categoryId: 2 })
        assert.equal((await suite.store.categories.update(2, { name: 'CATS' })).outcome, 'written', 'its own name in another case')
        await suite.store.categories.update(2, { name: 'Cats' })
      })

      it('refuses a pet, or a pet\'s change, naming a category that does not exist, and writes nothing', async () => {
        const before = (await suite.other.db.selectFrom('pets').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n
        assert.deepEqual(await suite.store.pets.insert({ name: 'Nowhere', categoryId: 987654 }, NOW), { outcome: 'no_such_category' })
        // Refused among accepted ones in the same batch, the others still made.
        const together = await Promise.all([suite.store.pets.insert({ name: 'A', categoryId: 3 }, NOW), suite.store.pets.insert({ name: 'B', categoryId: 987654 }, NOW), suite.store.pets.insert({ name: 'C', categoryId: 3 }, NOW)])
        assert.deepEqual(together.map((r) => r.outcome), ['created', 'no_such_category', 'created'])
        const after = (await suite.other.db.selectFrom('pets').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n
        assert.equal(Number(after), Number(before) + 2)
        const pet = await newPet({ categoryId: 4 })
        assert.deepEqual(await suite.store.pets.update(pet.id, { categoryId: 987654 }), { outcome: 'no_such_category' })
        assert.equal((await suite.store.pets.find(pet.id))?.categoryId, 4)
        assert.equal((await suite.store.pets.update(pet.id, { categoryId: 5, name: 'Moved' })).outcome, 'updated')
      })

      it('refuses to remove a category pets name, until none does', async () => {
        const made = await suite.store.categories.insert({ name: 'Hedgehogs' }, NOW)
        const id = (made as { category: { id: number } }).category.id
        const pet = await newPet({ categoryId: id })
        assert.deepEqual(await suite.store.categories.remove(id), { outcome: 'category_in_use' })
        assert.ok(await suite.store.categories.find(id))
        await suite.store.pets.remove(pet.id)
        assert.deepEqual(await suite.store.categories.remove(id), { outcome: 'removed' })
      })

      it('holds the rules for writes that bypass the store (the database refuses them)', async () => {
        await assert.rejects(sql`insert into pets (name, category_id, status, created_at) values ('raw', 987654, 'available', 0)`.execute(suite.other.db))
        const pet = await newPet({ categoryId: 6 })
        await assert.rejects(sql`update pets set category_id = 987654 where id = ${pet.id}`.execute(suite.other.db))
        await assert.rejects(sql`delete from categories where id = 6`.execute(suite.other.db))
      })
    })

    describe('pet changes', () => {
      const accountId = 1
      it('updates the fields given, keeps the others, and commits before it resolves', async () => {
        const pet = await newPet({ status: 'pending' })
        const result = await suite.store.pets.update(pet.id, { name: 'Renamed', status: 'available' })
        assert.deepEqual(result, { outcome: 'updated', pet: { ...pet, name: 'Renamed', status: 'available' } })
        assert.equal(await committedStatus(pet.id), 'available')
        assert.deepEqual(await suite.store.pets.find(pet.id), { ...pet, name: 'Renamed', status: 'available' })
      })

      it('refuses, writing nothing: no such pet, a precondition that does not hold, a status change or a removal under an open order', async () => {
        assert.deepEqual(await suite.store.pets.update(2 ** 40, { name: 'x' }), { outcome: 'no_such_pet' })
        assert.deepEqual(await suite.store.pets.remove(2 ** 40), { outcome: 'no_such_pet' })
        const pet = await newPet()
        assert.deepEqual(await suite.store.pets.update(pet.id, { name: 'x' }, () => false), { outcome: 'precondition_failed', current: pet })
        assert.deepEqual(await suite.store.pets.remove(pet.id, (current) => current.name === 'someone else'), { outcome: 'precondition_failed', current: pet })
        const placed = await suite.store.orders.place(pet.id, accountId, NOW)
        assert.ok(placed.outcome === 'placed')
        assert.deepEqual(await suite.store.pets.update(pet.id, { status: 'sold' }), { outcome: 'pet_in_order', orderId: placed.order.id, accountId })
        assert.deepEqual(await suite.store.pets.remove(pet.id), { outcome: 'pet_in_order', orderId: placed.order.id, accountId })
        assert.equal(await committedStatus(pet.id), 'pending')
        assert.equal((await suite.store.pets.update(pet.id, { name: 'Reserved Rex' })).outcome, 'updated', 'suite.other fields may change')
      })

      it('removes a pet no open order holds; its closed orders keep its id', async () => {
        const pet = await newPet()
        const placed = await suite.store.orders.place(pet.id, accountId, NOW)
        assert.ok(placed.outcome === 'placed')
        assert.equal((await suite.store.orders.close(placed.order.id, accountId, 'completed', NOW)).outcome, 'closed')
        assert.deepEqual(await suite.store.pets.remove(pet.id), { outcome: 'removed' })
        assert.equal(await committedStatus(pet.id), undefined)
        assert.equal((await suite.store.orders.find(placed.order.id, accountId))?.petId, pet.id)
        assert.deepEqual(await suite.store.orders.place(pet.id, accountId, NOW), { outcome: 'no_such_pet' })
      })
    })

    describe('orders', () => {
      const accountId = 1

      it('places an order: the pet is pending, the order placed, both committed when it resolves', async () => {
        const pet = await newPet()
        const placed = await suite.store.orders.place(pet.id, accountId, NOW)
        assert.ok(placed.outcome === 'placed')
        assert.deepEqual(placed.order, { id: placed.order.id, petId: pet.id, status: 'placed', placedAt: new Date(NOW).toISOString() })
        assert.equal(await committedStatus(pet.id), 'pending')
        assert.equal(await openOrders(pet.id), 1)
      })

      it('refuses a pet that is not available, and one that does not exist, writing nothing', async () => {
        const sold = await newPet({ status: 'sold' })
        assert.deepEqual(await suite.store.orders.place(sold.id, accountId, NOW), { outcome: 'pet_unavailable', status: 'sold' })
        assert.deepEqual(await suite.store.orders.place(2 ** 40, accountId, NOW), { outcome: 'no_such_pet' })
        assert.equal(await committedStatus(sold.id), 'sold')
        assert.equal(await openOrders(sold.id), 0)
      })

      it('of reservations asked together, places one per pet, refuses the others, and fails none for its neighbour', async () => {
        const [contested, taken, free] = [await newPet(), await newPet(), await newPet()]
        // `taken` has an open order although its status says available (changed by
        // hand): only orders_one_open_per_pet refuses it, as pet_unavailable.
        assert.equal((await suite.store.orders.place(taken.id, accountId, NOW)).outcome, 'placed')
        await setStatusByHand(taken.id, 'available')
        const results = await Promise.all([
          suite.store.orders.place(contested.id, accountId, NOW),
          suite.store.orders.place(contested.id, accountId + 1, NOW),
          suite.store.orders.place(taken.id, accountId, NOW),
          suite.store.orders.place(2 ** 40, accountId, NOW),
          suite.store.orders.place(free.id, accountId, NOW),
        ])
        assert.deepEqual(
          results.map((r) => r.outcome),
          ['placed', 'pet_unavailable', 'pet_unavailable', 'no_such_pet', 'placed'],
        )
        assert.equal(await openOrders(contested.id), 1)
        assert.equal(await openOrders(taken.id), 1)
        assert.equal(await committedStatus(taken.id), 'available', 'the refused reservation changed nothing')
        assert.equal(await committedStatus(free.id), 'pending')
      })

      it('closes an order once, however many ask together: completed makes the pet sold, cancelled available', async () => {
        for (const [to, petStatus] of [['completed', 'sold'], ['cancelled', 'available']] as const) {
          const pet = await newPet()
          const placed = await suite.store.orders.place(pet.id, accountId, NOW)
          assert.ok(placed.outcome === 'placed')
          const [mine, again, notMine] = await Promise.all([
            suite.store.orders.close(placed.order.id, accountId, to, NOW + 1),
            suite.store.orders.close(placed.order.id, accountId, to, NOW + 1),
            suite.store.orders.close(placed.order.id, accountId + 1, to, NOW + 1),
          ])
          assert.deepEqual([mine!.outcome, again!.outcome].sort(), ['closed', 'order_closed'], 'one of two racing closes wins')
          assert.equal(notMine!.outcome, 'no_such_order', 'another key\'s order is not found')
          const closed = mine!.outcome === 'closed' ? mine : again
          assert.ok(closed?.outcome === 'closed')
          assert.deepEqual(closed.order, { ...placed.order, status: to, closedAt: new Date(NOW + 1).toISOString() })
          assert.equal(await committedStatus(pet.id), petStatus)
        }
        assert.deepEqual(await suite.store.orders.close(2 ** 40, accountId, 'completed', NOW), { outcome: 'no_such_order' })
      })

      it('finds and lists only the orders of their own key, in id order, by status, from a position', async () => {
        const owner = 1_000 + Math.floor(Math.random() * 1_000_000)
        const placed = []
        for (let i = 0; i < 3; i++) {
          const result = await suite.store.orders.place((await newPet()).id, owner, NOW)
          assert.ok(result.outcome === 'placed')
          placed.push(result.order)
        }
        const [first, second, third] = placed
        await suite.store.orders.close(second!.id, owner, 'cancelled', NOW + 5)
        assert.deepEqual(await suite.store.orders.find(first!.id, owner), first)
        assert.equal(await suite.store.orders.find(first!.id, owner + 1), undefined, 'another key\'s order is not found')
        assert.deepEqual((await suite.store.orders.list({ accountId: owner, afterId: 0, limit: 10 })).map((o) => o.id), [first!.id, second!.id, third!.id])
        assert.deepEqual((await suite.store.orders.list({ accountId: owner, status: 'placed', afterId: 0, limit: 10 })).map((o) => o.id), [first!.id, third!.id])
        assert.deepEqual((await suite.store.orders.list({ accountId: owner, afterId: first!.id, limit: 1 })).map((o) => o.id), [second!.id])
        assert.deepEqual(await suite.store.orders.list({ accountId: owner + 1, afterId: 0, limit: 10 }), [])
      })
    })

    describe('delivery queue', () => {
      /** An endpoint taking every event, and `n` test events queued for it, due at NOW. */
      const queued = async (n: number) => {
        const key = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `queue-${Math.random()}` }, NOW)
        const endpoint = (await suite.store.webhookEndpoints.insertEndpoint({ accountId: key.account.id, url: 'https://example.com/hook', description: '', enabledEvents: '*', secret: 'whsec_c2VjcmV0' }, NOW))!
        for (let i = 0; i < n; i++) await suite.store.webhookEndpoints.insertTestEvent(endpoint, 'webhook_endpoint.test', '{}', NOW)
        return endpoint
      }
      const failingSince = async (id: number) => (await suite.other.db.selectFrom('webhook_endpoints').select('failing_since').where('id', '=', id).executeTakeFirstOrThrow()).failing_since

      it('claims at most perEndpoint of an endpoint, and records attempts that end together at once: lost leases skipped, failing_since as if one by one', async () => {
        const endpoint = await queued(5)
        const claimed = (await suite.store.deliveries.claimDue(NOW + 1, 60_000, 20, 4)).filter((d) => d.endpoint.id === endpoint.id)
        assert.equal(claimed.length, 4, 'four of five: its limit')
        assert.equal(claimed[0]!.event.type, 'webhook_endpoint.test')
        assert.equal(claimed[0]!.secrets.secret, 'whsec_c2VjcmV0')
        const attempt = (d: (typeof claimed)[number], at: number, ok: boolean, leaseUntil = d.leaseUntil) => ({
          deliveryId: d.id, leaseUntil, trigger: d.trigger, at, durationMs: 3, responseStatus: ok ? 200 : 500, error: null,
          outcome: ok ? ({ status: 'delivered' } as const) : ({ status: 'pending', nextAttemptAt: at + 5_000 } as const),
        })
        const [a, b, c, d] = claimed as [typeof claimed[number], typeof claimed[number], typeof claimed[number], typeof claimed[number]]
        // A failure, a success, then two failures: one by one, failing_since ends at the first failure after the success.
        assert.deepEqual(await suite.store.deliveries.recordAttempts([attempt(a, NOW + 10, false), attempt(b, NOW + 11, true), attempt(c, NOW + 12, false), attempt(d, NOW + 13, false, 1)]), [true, true, true, false])
        assert.equal(await failingSince(endpoint.id), NOW + 12)
        const rows = await suite.other.db.selectFrom('webhook_deliveries').select(['id', 'status', 'attempts', 'lease_until', 'next_attempt_at']).where('endpoint_id', '=', endpoint.id).orderBy('id').execute()
        assert.deepEqual(rows.slice(0, 4).map((r) => [r.status, r.attempts, r.lease_until === null, Number(r.next_attempt_at)]), [['pending', 1, true, NOW + 5_010], ['delivered', 1, true, NOW], ['pending', 1, true, NOW + 5_012], ['pending', 0, false, NOW]])
        const attempts = await suite.other.db.selectFrom('webhook_attempts').select(['delivery_id', 'response_status']).where('endpoint_id', '=', endpoint.id).orderBy('delivery_id').execute()
        assert.deepEqual(attempts.map((r) => [r.delivery_id, r.response_status]), [[a.id, 500], [b.id, 200], [c.id, 500]])
        // Failures alone keep the first failure's time; a success last clears it.
        const [e] = (await suite.store.deliveries.claimDue(NOW + 2, 60_000, 20, 4)).filter((x) => x.endpoint.id === endpoint.id && x.attempts === 0 && x.id !== d.id)
        assert.deepEqual(await suite.store.deliveries.recordAttempts([attempt(e!, NOW + 20, false)]), [true])
        assert.equal(await failingSince(endpoint.id), NOW + 12)
        await suite.store.deliveries.recordAttempts([attempt(d, NOW + 21, false), attempt(e!, NOW + 22, true)])
        assert.equal(await failingSince(endpoint.id), NOW + 12, 'e was recorded already: its lease is gone, and d failed')
      })

      it('claims ahead only for an endpoint whose every live lease the claimant holds, and a record that claims too counts the leases it gives back as room', async () => {
        const endpoint = await queued(14)
        const its = (list: readonly ClaimedDelivery[]) => list.filter((d) => d.endpoint.id === endpoint.id)
        const ahead = (held: readonly ClaimedDelivery[]) => ({ extra: 6, endpoints: [endpoint.id], held: held.map((d) => d.id) })
        const first = its(await suite.store.deliveries.claimDue(NOW + 1, 60_000, 50, 2, ahead([])))
        assert.equal(first.length, 8, 'none under lease: its 2, and 6 ahead')
        assert.equal(its(await suite.store.deliveries.claimDue(NOW + 1, 60_000, 50, 2, ahead([]))).length, 0, 'another dispatcher (holding none of them) finds no room')
        assert.equal(its(await suite.store.deliveries.claimDue(NOW + 1, 60_000, 50, 2, ahead(first))).length, 0, 'the claimant has its 2 and 6 ahead already')
        const done = first.slice(0, 3).map((d) => ({
          deliveryId: d.id, leaseUntil: d.leaseUntil, trigger: d.trigger, at: NOW + 2, durationMs: 1, responseStatus: 204, error: null, outcome: { status: 'delivered' } as const,
        }))
        const { recorded, claimed } = await suite.store.deliveries.recordAndClaim(done, { now: NOW + 2, leaseMs: 60_000, limit: 50, perEndpoint: 2, ahead: ahead(first) })
        assert.deepEqual(recorded, [true, true, true])
        assert.equal(its(claimed).length, 3, 'the three recorded leave room for three in the same statement')
        assert.equal(its(await suite.store.deliveries.claimDue(NOW + 2, 60_000, 50, 2)).length, 0, 'without claiming ahead, 8 under lease leave none')
        // Another dispatcher holds one of a second endpoint's deliveries: the claimant gets its share of perEndpoint, nothing ahead.
        const shared = await queued(5)
        assert.equal((await suite.store.deliveries.claimDue(NOW + 3, 60_000, 50, 1)).filter((d) => d.endpoint.id === shared.id).length, 1)
        const beside = (await suite.store.deliveries.claimDue(NOW + 3, 60_000, 50, 2, { extra: 6, endpoints: [shared.id], held: [] })).filter((d) => d.endpoint.id === shared.id)
        assert.equal(beside.length, 1, 'perEndpoint (2) less the other dispatcher\'s one')
      })
    })

    describe('API keys and accounts', () => {
      it('stores a key by its hash with a new account, finds it by hash and id, re-plans the account, revokes once and records its use', async () => {
        const hash = `hash-${Math.random()}`
        const key = await suite.store.apiKeys.insert({ ...NEW_KEY, name: 'contract', account: { name: 'acme', plan: 'enterprise', custom: { perMinute: 5, perDay: 50 } }, prefix: 'ps_test_AbCd', hash }, NOW)
        assert.deepEqual(key, {
          id: key.id,
          account: { id: key.account.id, name: 'acme', plan: 'enterprise', custom: { perMinute: 5, perDay: 50 }, createdAt: NOW, disabledAt: null },
          name: 'contract',
          prefix: 'ps_test_AbCd',
          scopes: 'pets:read',
          createdAt: NOW,
          lastUsedAt: null,
          revokedAt: null,
          expiresAt: null,
          disabledAt: null,
          disabledByOperator: false,
          replacedBy: null,
          createdBy: null,
        })
        assert.deepEqual(await suite.store.apiKeys.findByHash(hash), key)
        assert.deepEqual(await suite.store.apiKeys.findById(key.id), key)
        const stopped = await suite.store.apiKeys.update(key.id, { disabledAt: NOW, disabledByOperator: true })
        assert.deepEqual([stopped?.disabledAt, stopped?.disabledByOperator], [NOW, true], "the operator's stop")
        assert.deepEqual(await suite.store.apiKeys.update(key.id, { disabledAt: null, disabledByOperator: false }), key)
        assert.equal(await suite.store.apiKeys.findByHash('no such hash'), undefined)
        assert.deepEqual((await suite.store.apiKeys.page(undefined, key.id - 1, 1)), [key])
        await assert.rejects(suite.store.apiKeys.insert({ ...NEW_KEY, hash }, NOW), 'the hash is unique')
        await assert.rejects(suite.store.apiKeys.insert({ ...NEW_KEY, hash: `orphan-${Math.random()}`, account: 2 ** 40 }, NOW), 'a key belongs to an account that exists')

        const second = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `second-${Math.random()}`, account: key.account.id, createdBy: key.id }, NOW)
        assert.equal(second.account.id, key.account.id)
        assert.equal(second.createdBy, key.id)
        assert.deepEqual((await suite.store.apiKeys.page(key.account.id, 0, 10)).map((k) => k.id), [key.id, second.id], 'an account\'s keys')
        const other = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `other-${Math.random()}` }, NOW)
        assert.deepEqual(
          await suite.store.accounts.keyCounts([key.account.id, other.account.id, 2 ** 40]),
          new Map([
            [key.account.id, 2],
            [other.account.id, 1],
          ]),
          'the key counts of several accounts in one call; one with no keys is absent',
        )

        const replanned = await suite.store.accounts.update(key.account.id, { plan: 'pro', custom: null })
        assert.deepEqual(replanned, { ...key.account, plan: 'pro', custom: null })
        assert.equal((await suite.store.apiKeys.findById(second.id))!.account.plan, 'pro', 'every key of the account has its plan')
        await suite.store.apiKeys.touch(key.id, NOW + 1)
        assert.deepEqual(await suite.store.apiKeys.revoke(key.id, NOW + 2, false), [key.id])
        assert.deepEqual(await suite.store.apiKeys.revoke(key.id, NOW + 3, false), [], 'revoking twice keeps the first time')
        assert.deepEqual(await suite.store.apiKeys.findById(key.id), { ...key, account: replanned, lastUsedAt: NOW + 1, revokedAt: NOW + 2 })
        assert.equal(await suite.store.accounts.update(2 ** 40, { plan: 'pro' }), undefined)
        assert.equal(await suite.store.apiKeys.revoke(2 ** 40, NOW, false), undefined)
      })

      it('revokes with cascade every key a key made, however deep, and no other', async () => {
        const root = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `root-${Math.random()}` }, NOW)
        const made = (by: typeof root, name: string) => suite.store.apiKeys.insert({ ...NEW_KEY, hash: `${name}-${Math.random()}`, account: root.account.id, createdBy: by.id }, NOW)
        const child = await made(root, 'child')
        const grandchild = await made(child, 'grandchild')
        const sibling = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `sibling-${Math.random()}`, account: root.account.id }, NOW)
        await suite.store.apiKeys.revoke(grandchild.id, NOW, false)
        assert.deepEqual(await suite.store.apiKeys.revoke(root.id, NOW + 1, true), [root.id, child.id], 'the grandchild was revoked before')
        assert.equal((await suite.store.apiKeys.findById(grandchild.id))!.revokedAt, NOW)
        assert.equal((await suite.store.apiKeys.findById(sibling.id))!.revokedAt, null)
      })

      it('pages by id, updates only the fields given, and disables and enables', async () => {
        const a = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `a-${Math.random()}` }, NOW)
        const b = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `b-${Math.random()}` }, NOW)
        assert.deepEqual((await suite.store.apiKeys.page(undefined, a.id - 1, 2)).map((k) => k.id), [a.id, b.id])
        assert.deepEqual((await suite.store.apiKeys.page(undefined, a.id, 1)).map((k) => k.id), [b.id])
        const renamed = await suite.store.apiKeys.update(a.id, { name: 'renamed', scopes: 'pets:read pets:write', disabledAt: NOW + 5 })
        assert.deepEqual(renamed, { ...a, name: 'renamed', scopes: 'pets:read pets:write', disabledAt: NOW + 5 })
        assert.deepEqual(await suite.store.apiKeys.update(a.id, { disabledAt: null }), { ...renamed, disabledAt: null })
        assert.equal(await suite.store.apiKeys.update(2 ** 40, { name: 'x' }), undefined)
        const disabled = await suite.store.accounts.update(a.account.id, { disabledAt: NOW + 6 })
        assert.equal(disabled!.disabledAt, NOW + 6)
        assert.equal((await suite.store.apiKeys.findById(a.id))!.account.disabledAt, NOW + 6)
      })

      it('rolls a key in one transaction: the new one inserted in the same account, the old one ending at the grace period or its own earlier expiry', async () => {
        const old = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `old-${Math.random()}`, expiresAt: NOW + 1_000 }, NOW)
        const next = { ...NEW_KEY, hash: `next-${Math.random()}`, account: old.account.id }
        const rolled = (await suite.store.apiKeys.roll(old.id, next, NOW + 5_000, NOW + 1))!
        assert.equal(rolled.old.expiresAt, NOW + 1_000, 'its own expiry came first')
        assert.equal(rolled.old.replacedBy, rolled.next.id)
        assert.equal(rolled.next.account.id, old.account.id)
        const again = (await suite.store.apiKeys.roll(rolled.next.id, { ...NEW_KEY, hash: `n2-${Math.random()}`, account: old.account.id }, NOW + 5_000, NOW + 2))!
        assert.equal(again.old.expiresAt, NOW + 5_000, 'no expiry of its own: the grace period')
        await suite.store.apiKeys.revoke(again.next.id, NOW, false)
        const hash = `n3-${Math.random()}`
        assert.equal(await suite.store.apiKeys.roll(again.next.id, { ...NEW_KEY, hash, account: old.account.id }, NOW, NOW), undefined, 'a revoked key is not rolled')
        assert.equal(await suite.store.apiKeys.findByHash(hash), undefined, 'and nothing was inserted')
        assert.equal(await suite.store.apiKeys.roll(2 ** 40, { ...NEW_KEY, hash, account: old.account.id }, NOW, NOW), undefined)
      })

      it('makes or rolls a key for an acting key only while that key is active, writing nothing otherwise', async () => {
        const actor = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `actor-${Math.random()}` }, NOW)
        const account = actor.account.id
        const sibling = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `sib-${Math.random()}`, account }, NOW)
        // The service's rule (key-admin.ts), given to the store: applied to the key as the write's transaction reads it.
        const acting = (at: number) => ({ id: actor.id, mayAct: (stored: StoredApiKey) => keyState(toApiKeyRecord(stored), at) === 'active' })
        const made = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `made-${Math.random()}`, account, createdBy: actor.id, actingKey: acting(NOW) }, NOW)
        assert.equal(made.createdBy, actor.id, 'an active key makes one')
        const refusedFor = async (what: string, at = NOW) => {
          const hash = `refused-${Math.random()}`
          await assert.rejects(suite.store.apiKeys.insert({ ...NEW_KEY, hash, account, createdBy: actor.id, actingKey: acting(at) }, at), ActingKeyRefused, `make, ${what}`)
          await assert.rejects(suite.store.apiKeys.roll(sibling.id, { ...NEW_KEY, hash, account, actingKey: acting(at) }, at, at), ActingKeyRefused, `roll, ${what}`)
          assert.equal(await suite.store.apiKeys.findByHash(hash), undefined, `nothing inserted, ${what}`)
          assert.equal((await suite.store.apiKeys.findById(sibling.id))!.replacedBy, null, `nothing rolled, ${what}`)
        }
        await suite.store.apiKeys.update(actor.id, { disabledAt: NOW })
        await refusedFor('disabled')
        await suite.store.apiKeys.update(actor.id, { disabledAt: null })
        await suite.store.accounts.update(account, { disabledAt: NOW })
        await refusedFor('its account disabled')
        await suite.store.accounts.update(account, { disabledAt: null })
        await sql`update api_keys set expires_at = ${NOW + 10} where id = ${actor.id}`.execute(suite.other.db)
        await refusedFor('expired', NOW + 10)
        await suite.store.apiKeys.revoke(actor.id, NOW, false)
        await refusedFor('revoked')
      })

      // SQLite runs one write transaction at a time: a revoke never overlaps an insert there.
      if (dialect === 'postgres') it('a cascading revoke finds a key committed by one of the keys it revokes while it ran (its first pass read before that commit)', async () => {
        const root = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `root-${Math.random()}` }, NOW)
        // Another instance makes a key for root, as apiKeys.insert does: inserted, then root held in share mode, then committed.
        const child = await suite.other.db.connection().execute(async (conn) => {
          await sql`begin`.execute(conn)
          const { id } = await conn.insertInto('api_keys').values({ account_id: root.account.id, name: 'made meanwhile', prefix: 'ps_test_Mmmm', key_hash: `meanwhile-${Math.random()}`, scopes: 'pets:read', created_by: root.id, created_at: NOW }).returning('id').executeTakeFirstOrThrow()
          await sql`select id from api_keys where id = ${root.id} for share`.execute(conn)
          const revoking = suite.store.apiKeys.revoke(root.id, NOW + 1, true)
          // The revoke waits for root's row until this commits.
          for (let waited = 0; Number((await sql<{ n: string }>`select count(*) as n from pg_locks where not granted`.execute(suite.other.db)).rows[0]!.n) === 0; waited += 10) {
            assert.ok(waited < 5_000, 'the revoke never waited for the insert')
            await new Promise((resolve) => setTimeout(resolve, 10))
          }
          await sql`commit`.execute(conn)
          return { id: Number(id), revoked: await revoking }
        })
        assert.deepEqual(child.revoked, [root.id, child.id])
        assert.equal((await suite.store.apiKeys.findById(child.id))!.revokedAt, NOW + 1)
      })
    })

    describe('usage', () => {
      it('adds to the count of a key, hour and outcome from any number of batches, reads an account\'s or one key\'s range by hour, and purges old hours', async () => {
        const hour = 3_600_000
        const first = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `u1-${Math.random()}` }, NOW)
        const second = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `u2-${Math.random()}`, account: first.account.id }, NOW)
        const stranger = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `u3-${Math.random()}` }, NOW)
        await suite.store.usage.add([
          { apiKeyId: first.id, accountId: first.account.id, hour: 10 * hour, outcome: 'ok', requests: 5 },
          { apiKeyId: first.id, accountId: first.account.id, hour: 10 * hour, outcome: 'rate_limited', requests: 2 },
          { apiKeyId: first.id, accountId: first.account.id, hour: 11 * hour, outcome: 'ok', requests: 1 },
          { apiKeyId: second.id, accountId: first.account.id, hour: 10 * hour, outcome: 'ok', requests: 4 },
          { apiKeyId: stranger.id, accountId: stranger.account.id, hour: 10 * hour, outcome: 'ok', requests: 7 },
        ])
        await suite.store.usage.add([{ apiKeyId: first.id, accountId: first.account.id, hour: 10 * hour, outcome: 'ok', requests: 3 }])
        await suite.store.usage.add([])
        const account = { accountId: first.account.id }
        assert.deepEqual(await suite.store.usage.history(account, 10 * hour, 12 * hour), [
          { hour: 10 * hour, outcome: 'ok', requests: 12 },
          { hour: 10 * hour, outcome: 'rate_limited', requests: 2 },
          { hour: 11 * hour, outcome: 'ok', requests: 1 },
        ], 'the account\'s keys together, no other account\'s')
        assert.deepEqual(await suite.store.usage.history({ ...account, keyId: second.id }, 10 * hour, 12 * hour), [{ hour: 10 * hour, outcome: 'ok', requests: 4 }])
        assert.deepEqual(await suite.store.usage.history({ accountId: first.account.id, keyId: stranger.id }, 10 * hour, 12 * hour), [], 'a key of another account is not counted')
        assert.deepEqual((await suite.store.usage.history(account, 11 * hour, 12 * hour)).length, 1)
        await suite.store.usage.purge(11 * hour)
        assert.deepEqual((await suite.store.usage.history(account, 0, 12 * hour)).map((row) => row.hour), [11 * hour])
      })

      it("adds more rows at once than a statement takes parameters (a flush of thousands of keys' counts), and sums them per account", async () => {
        const hour = 3_600_000
        const key = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `u5-${Math.random()}` }, NOW)
        // 20,000 rows of 4 parameters: past SQLite's 32,766 and PostgreSQL's 65,535 in one statement.
        const rows = Array.from({ length: 20_000 }, (_, i) => ({ apiKeyId: key.id, accountId: key.account.id, hour: (2_000 + (i % 4_000)) * hour, outcome: USAGE_OUTCOMES[Math.floor(i / 4_000)]!, requests: 1 }))
        await suite.store.usage.add(rows)
        const counts = await suite.store.usage.history({ accountId: key.account.id }, 0, 10_000 * hour)
        assert.equal(counts.length, 20_000)
        assert.equal(counts.reduce((sum, row) => sum + row.requests, 0), 20_000)
        assert.equal((await suite.store.usage.history({ accountId: key.account.id, keyId: key.id }, 0, 10_000 * hour)).length, 20_000)
      })

      it('purges old hours however many there are, a batch a statement, and none younger', async () => {
        const hour = 3_600_000
        const key = await suite.store.apiKeys.insert({ ...NEW_KEY, hash: `u4-${Math.random()}` }, NOW)
        const hours = 2_500
        await suite.store.usage.add(Array.from({ length: hours + 1 }, (_, i) => ({ apiKeyId: key.id, accountId: key.account.id, hour: (1_000 + i) * hour, outcome: 'ok' as const, requests: 1 })))
        await suite.store.usage.purge((1_000 + hours) * hour)
        assert.deepEqual(await suite.store.usage.history({ accountId: key.account.id }, 0, 10_000 * hour), [{ hour: (1_000 + hours) * hour, outcome: 'ok', requests: 1 }])
      })
    })

    describe('Idempotency-Key records', () => {
      let n = 0
      const scope = (): IdempotencyScope => ({ accountId: 1, key: `key-${++n}` })
      const options = (fingerprint: string, now = NOW): ClaimOptions => ({ fingerprint, now, ttlMs: 60_000, leaseMs: 1_000 })

      it('claims a key once: the same request again is in flight, another body a mismatch', async () => {
        const s = scope()
        assert.equal((await suite.store.idempotency.claim(s, options('a'))).outcome, 'claimed')
        assert.deepEqual(await suite.store.idempotency.claim(s, options('a')), { outcome: 'in_flight' })
        assert.deepEqual(await suite.store.idempotency.claim(s, options('b')), { outcome: 'mismatch' })
        assert.equal((await suite.store.idempotency.claim({ ...s, accountId: 2 }, options('b'))).outcome, 'claimed', 'keys are scoped per API key')
      })

      it('stores the response in the transaction of the write, and replays it', async () => {
        const s = scope()
        const claim = await suite.store.idempotency.claim(s, options('pet'))
        assert.ok(claim.outcome === 'claimed')
        const pet = await insertPet(suite.store.pets, { name: 'Once', categoryId: 1 }, NOW, { claim: claim.claim, status: 201 })
        assert.deepEqual(await suite.store.idempotency.claim(s, options('pet')), { outcome: 'replay', response: { status: 201, body: pet } })
        assert.deepEqual(await suite.store.idempotency.claim(s, options('other')), { outcome: 'mismatch' })

        const order = scope()
        const orderClaim = await suite.store.idempotency.claim(order, options('order'))
        assert.ok(orderClaim.outcome === 'claimed')
        const placed = await suite.store.orders.place(pet.id, 1, NOW, { claim: orderClaim.claim, status: 201 })
        assert.ok(placed.outcome === 'placed')
        assert.deepEqual(await suite.store.idempotency.claim(order, options('order')), { outcome: 'replay', response: { status: 201, body: placed.order } })
      })

      it('stores nothing for a refused reservation; release frees the key', async () => {
        const s = scope()
        const claim = await suite.store.idempotency.claim(s, options('refused'))
        assert.ok(claim.outcome === 'claimed')
        assert.deepEqual(await suite.store.orders.place(2 ** 40, 1, NOW, { claim: claim.claim, status: 201 }), { outcome: 'no_such_pet' })
        assert.deepEqual(await suite.store.idempotency.claim(s, options('refused')), { outcome: 'in_flight' })
        await suite.store.idempotency.release(claim.claim)
        assert.equal((await suite.store.idempotency.claim(s, options('refused'))).outcome, 'claimed')
      })

      it('lets the same request take over an abandoned claim after its lease, never another body; a lost claim rolls the write back', async () => {
        const s = scope()
        const slow = await suite.store.idempotency.claim(s, options('same'))
        assert.ok(slow.outcome === 'claimed')
        assert.deepEqual(await suite.store.idempotency.claim(s, options('different', NOW + 1_000)), { outcome: 'mismatch' })
        const retry = await suite.store.idempotency.claim(s, options('same', NOW + 1_000))
        assert.ok(retry.outcome === 'claimed')
        await suite.store.idempotency.release(slow.claim) // must not free the retry's claim
        await assert.rejects(insertPet(suite.store.pets, { name: 'Rolled back', categoryId: 1 }, NOW, { claim: slow.claim, status: 201 }), ClaimLostError)
        const names = await suite.other.db.selectFrom('pets').select('id').where('name', '=', 'Rolled back').execute()
        assert.deepEqual(names, [], 'the slow request\'s insert was rolled back')
        const pet = await insertPet(suite.store.pets, { name: 'Counted', categoryId: 1 }, NOW, { claim: retry.claim, status: 201 })
        assert.deepEqual(await suite.store.idempotency.claim(s, options('same', NOW + 1_000)), { outcome: 'replay', response: { status: 201, body: pet } })
      })

      it('completes the claim in a category\'s and an endpoint\'s insert, a sealed secret kept beside the body; a lost claim rolls the insert back', async () => {
        const category = scope()
        const categoryClaim = await suite.store.idempotency.claim(category, options('category'))
        assert.ok(categoryClaim.outcome === 'claimed')
        const written = await suite.store.categories.insert({ name: `Kept ${n}` }, NOW, { claim: categoryClaim.claim, status: 201 })
        assert.ok(written.outcome === 'written')
        assert.deepEqual(await suite.store.idempotency.claim(category, options('category')), { outcome: 'replay', response: { status: 201, body: written.category } })

        const endpoint = { accountId: 1, url: 'https://example.com/hook', description: '', enabledEvents: '*', secret: 'v1.sealed' }
        const slow = await suite.store.idempotency.claim(scope(), options('endpoint'))
        assert.ok(slow.outcome === 'claimed')
        const kept = { completion: { claim: slow.claim, status: 201 }, body: (stored: { id: number }) => ({ id: stored.id }), sealedSecret: 'v1.sealed-for-replay' }
        const made = (await suite.store.webhookEndpoints.insertEndpoint(endpoint, NOW, Infinity, kept))!
        assert.deepEqual(await suite.store.idempotency.claim(slow.claim, options('endpoint')), {
          outcome: 'replay',
          response: { status: 201, body: { id: made.id }, sealedSecret: 'v1.sealed-for-replay' },
        })
        const held = { accountId: 1, key: slow.claim.key }
        assert.deepEqual(await suite.store.idempotency.sealedSecrets(undefined, 100), [{ ...held, sealedSecret: 'v1.sealed-for-replay' }])
        assert.deepEqual(await suite.store.idempotency.sealedSecrets(held, 100), [], 'paged by key')
        assert.equal(await suite.store.idempotency.replaceSealedSecret(held, 'v1.other', 'v1.resealed'), false, 'only from what it was')
        assert.equal(await suite.store.idempotency.replaceSealedSecret(held, 'v1.sealed-for-replay', 'v1.resealed'), true)

        const lost = scope()
        const first = await suite.store.idempotency.claim(lost, options('lost'))
        assert.ok(first.outcome === 'claimed')
        assert.equal((await suite.store.idempotency.claim(lost, options('lost', NOW + 1_000))).outcome, 'claimed', 'taken over')
        await assert.rejects(suite.store.categories.insert({ name: 'Rolled back' }, NOW, { claim: first.claim, status: 201 }), ClaimLostError)
        await assert.rejects(suite.store.webhookEndpoints.insertEndpoint({ ...endpoint, url: 'https://example.com/rolled-back' }, NOW, Infinity, { ...kept, completion: { claim: first.claim, status: 201 } }), ClaimLostError)
        assert.deepEqual(await suite.other.db.selectFrom('categories').select('id').where('name', '=', 'Rolled back').execute(), [])
        assert.deepEqual(await suite.other.db.selectFrom('webhook_endpoints').select('id').where('url', '=', 'https://example.com/rolled-back').execute(), [])
      })

      it('forgets a record once it expires: any body claims it again, and the purge deletes it', async () => {
        const s = scope()
        assert.equal((await suite.store.idempotency.claim(s, options('old'))).outcome, 'claimed')
        assert.equal((await suite.store.idempotency.claim(s, options('new', NOW + 60_000))).outcome, 'claimed')
        assert.ok((await suite.store.idempotency.purgeExpired(NOW + 10 * 60_000)) >= 1)
        assert.equal((await suite.store.idempotency.claim(s, options('newer', NOW + 10 * 60_000))).outcome, 'claimed')
      })

      it('purges expired records however many there are, a batch a statement, and none still kept', async () => {
        const expired = 2_500
        const record = (key: string, expiresAt: number) => ({ account_id: 7, idempotency_key: key, fingerprint: 'f', locked_until: null, response_status: 201, response_body: '{}', sealed_secret: null, created_at: NOW, expires_at: expiresAt })
        for (let i = 0; i < expired; i += 500) {
          await suite.other.db.insertInto('idempotency_keys').values(Array.from({ length: 500 }, (_, j) => record(`expired-${i + j}`, NOW + 1))).execute()
        }
        await suite.other.db.insertInto('idempotency_keys').values(record('kept', NOW + 3_600_000)).execute()
        assert.ok((await suite.store.idempotency.purgeExpired(NOW + 60_000)) >= expired)
        const left = await suite.other.db.selectFrom('idempotency_keys').select('idempotency_key').where('account_id', '=', 7).execute()
        assert.deepEqual(left.map((row) => row.idempotency_key), ['kept'])
      })
    })
  })
}
