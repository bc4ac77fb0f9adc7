// The inventory is exact whoever writes to `pets`: the per-status counts that the
// triggers keep (migrations/2026-11-24-004) must equal a full count of the table
// after the service's writes, writes by hand (psql, a bulk load), rollbacks, pets
// that were there before the migration, and concurrent writers. Run over every
// backend; the full count is read through a connection of the test's own.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Migrator, sql } from 'kysely'
import pg from 'pg'
import { openDatabase, type DatabaseHandle } from './helpers/database.js'
import { migrationProvider } from '../src/db/migrations/index.js'
import { openStore } from '../src/db/open-store.js'
import type { Store } from '../src/db/store.js'
import type { Inventory } from '../src/schemas/order.js'
import { DIALECTS, storeForSuite } from './helpers/dialects.js'
import { needs } from './helpers/services.js'
import { insertPet } from './helpers/pets.js'

const NOW = Date.UTC(2026, 10, 24, 10)
const STATUSES = ['available', 'pending', 'sold'] as const

/** The truth the counts must match: every row of pets, counted. */
async function fullCount(handle: DatabaseHandle): Promise<Inventory> {
  const rows = await sql<{ status: string; count: number | string }>`select status, count(*) as count from pets group by status`.execute(handle.db)
  const inventory: Inventory = { available: 0, pending: 0, sold: 0 }
  for (const { status, count } of rows.rows) inventory[status as keyof Inventory] = Number(count)
  return inventory
}

for (const { dialect, create } of DIALECTS) {
  describe(`inventory counts (${dialect})`, async () => {
    if (dialect === 'postgres' && !(await needs('postgres', 'the PostgreSQL inventory counts'))) return
    const suite = storeForSuite(create)

    const assertExact = async (what: string) => assert.deepEqual(await suite.store.pets.inventory(), await fullCount(suite.other), what)
    const byHand = (query: string) => sql.raw(query).execute(suite.other.db)

    it("follows the service's own writes: batched creates, reservations, completions, cancellations", async () => {
      const created = await Promise.all(Array.from({ length: 30 }, (_, i) => insertPet(suite.store.pets, { name: `pet ${i}`, categoryId: 1, status: STATUSES[i % 3] }, NOW)))
      assert.deepEqual(await suite.store.pets.inventory(), { available: 10, pending: 10, sold: 10 })
      const available = created.filter((pet) => pet.status === 'available')
      const placed = await Promise.all(available.slice(0, 6).map((pet) => suite.store.orders.place(pet.id, 1, NOW)))
      await assertExact('after 6 reservations')
      assert.deepEqual(await suite.store.pets.inventory(), { available: 4, pending: 16, sold: 10 })
      const orders = placed.map((result) => (result.outcome === 'placed' ? result.order : assert.fail(result.outcome)))
      await Promise.all([
        ...orders.slice(0, 3).map((order) => suite.store.orders.close(order.id, 1, 'completed', NOW)),
        ...orders.slice(3).map((order) => suite.store.orders.close(order.id, 1, 'cancelled', NOW)),
      ])
      assert.deepEqual(await suite.store.pets.inventory(), { available: 7, pending: 10, sold: 13 })
      await assertExact('after closing them')
    })

    it('stays exact through writes made by hand: inserts, status updates, deletes, a bulk load', async () => {
      await byHand(`insert into pets (name, category_id, status, created_at) values ('by hand', 1, 'sold', ${NOW})`)
      await byHand(`update pets set status = 'available' where status = 'pending'`)
      await byHand(`update pets set name = 'renamed' where status = 'sold'`) // no status change: counts unchanged
      await byHand(`delete from pets where id in (select id from pets where status = 'sold' and id not in (select pet_id from orders) order by id limit 2)`)
      const bulk =
        dialect === 'postgres'
          ? `insert into pets (name, category_id, status, created_at) select 'bulk ' || i, 1, (array['available','pending','sold'])[1 + i % 3], ${NOW} from generate_series(1, 1000) as i`
          : `with recursive s(i) as (select 1 union all select i + 1 from s where i < 1000) insert into pets (name, category_id, status, created_at) select 'bulk ' || i, 1, case i % 3 when 0 then 'available' when 1 then 'pending' else 'sold' end, ${NOW} from s`
      await byHand(bulk)
      await assertExact('after writes by hand')
    })

    it('is unchanged by a transaction that rolls back', async () => {
      const before = await suite.store.pets.inventory()
      await assert.rejects(
        suite.other.db.transaction().execute(async (trx) => {
          await sql`insert into pets (name, category_id, status, created_at) values ('never', 1, 'available', ${NOW})`.execute(trx)
          await sql`update pets set status = 'sold' where status = 'available'`.execute(trx)
          throw new Error('roll back')
        }),
        /roll back/,
      )
      assert.deepEqual(await suite.store.pets.inventory(), before)
      await assertExact('after a rollback')
    })

    if (dialect === 'postgres') {
      it('stays exact with many writers at once, each on its own connection, without deadlock', async () => {
        const clients = await Promise.all(
          Array.from({ length: 8 }, async () => {
            const client = new pg.Client({ connectionString: suite.database.url })
            await client.connect()
            return client
          }),
        )
        try {
          await Promise.all(
            clients.map(async (client, i) => {
              for (let round = 0; round < 10; round++) {
                await client.query('begin')
                await client.query(`insert into pets (name, category_id, status, created_at) select 'w${i}', 1, $1, 0 from generate_series(1, 5)`, [STATUSES[(i + round) % 3]])
                await client.query(`update pets set status = $1 where id in (select id from pets where status = $2 order by id desc limit 3)`, [STATUSES[round % 3], STATUSES[(round + 1) % 3]])
                await client.query('commit')
              }
            }),
          )
        } finally {
          await Promise.all(clients.map((client) => client.end()))
        }
        await assertExact('after concurrent writers')
      })

      it('starts again from zero after TRUNCATE', async () => {
        await byHand('truncate pets cascade')
        assert.deepEqual(await suite.store.pets.inventory(), { available: 0, pending: 0, sold: 0 })
        await insertPet(suite.store.pets, { name: 'after truncate', categoryId: 1 }, NOW)
        await assertExact('after TRUNCATE and an insert')
      })
    }
  })

  describe(`inventory counts of pets there before the migration (${dialect})`, async () => {
    if (dialect === 'postgres' && !(await needs('postgres', 'the PostgreSQL inventory counts'))) return
    it('counts every pet the table held when the counts were added', async () => {
      const database = await create()
      const handle = openDatabase(database.url)
      let store: Store | undefined
      try {
        const migrator = new Migrator({ db: handle.db, provider: migrationProvider(handle.dialect) })
        const { error } = await migrator.migrateTo('2026-11-23-003-orders')
        assert.equal(error, undefined)
        for (const [i, status] of ['available', 'available', 'pending', 'sold', 'sold', 'sold'].entries()) {
          await sql`insert into pets (name, category_id, status, created_at) values (${`old ${i}`}, 1, ${status}, ${NOW})`.execute(handle.db)
        }
        store = await openStore(database.url) // applies the counts' migration
        assert.deepEqual(await store.pets.inventory(), { available: 2, pending: 1, sold: 3 })
      } finally {
        await store?.close()
        await handle.db.destroy()
        await database.drop()
      }
    })
  })
}
