// Order writes on SQLite through the writer's group commit, against a real file: the
// operations of one turn share one transaction, each in a savepoint of its own.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { migrate, openDatabase, type DatabaseHandle } from '../../src/db/database.js'
import { createSqliteGroupCommit } from '../../src/db/group-commit.js'
import type { PetsStore } from '../../src/db/pets-store.js'
import type { OrderWrites } from '../../src/db/order-writes.js'
import { createSqliteOrderWrites } from '../../src/db/sqlite-orders.js'
import { createSqlitePetsStore } from '../../src/db/sqlite-pets-store.js'

describe('SQLite order writes in the group commit', () => {
  let dir: string
  let file: string
  let handle: DatabaseHandle
  let pets: PetsStore
  let orders: OrderWrites
  let other: SqliteDatabase.Database
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-sqlite-orders-'))
    file = join(dir, 'petstore.db')
    handle = openDatabase(`sqlite:${file}`)
    await migrate(handle)
    const writer = handle.sqlite!.connection
    const groupCommit = createSqliteGroupCommit(handle.db, writer)
    pets = createSqlitePetsStore({ db: handle.db, writer, file, groupCommit })
    orders = createSqliteOrderWrites(writer, groupCommit)
    // A connection of its own sees only what is committed.
    other = new SqliteDatabase(file, { readonly: true })
  })
  after(async () => {
    other.close()
    pets.close()
    await handle.db.destroy()
    rmSync(dir, { recursive: true, force: true })
  })

  const apiKeyId = 1
  const committedStatus = (petId: number) => other.prepare('SELECT status FROM pets WHERE id = ?').pluck().get(petId)
  const committedOrders = (petId: number) => other.prepare("SELECT count(*) FROM orders WHERE pet_id = ? AND status = 'placed'").pluck().get(petId)

  it('two reservations of one pet in one batch: one placed, one pet_unavailable; a failing operation does not fail its neighbours', async () => {
    const [contested, taken, free] = await Promise.all([pets.insert({ name: 'a', categoryId: 1 }, 0), pets.insert({ name: 'b', categoryId: 1 }, 0), pets.insert({ name: 'c', categoryId: 1 }, 0)])
    // `taken` has an open order although its status says available (changed by hand):
    // only orders_one_open_per_pet refuses it.
    const first = await orders.place(taken!.id, apiKeyId, 1)
    assert.equal(first.outcome, 'placed')
    handle.sqlite!.connection.prepare("UPDATE pets SET status = 'available' WHERE id = ?").run(taken!.id)

    // All asked for in one turn: one group, one transaction.
    const settled = await Promise.allSettled([
      orders.place(contested!.id, apiKeyId, 2),
      orders.place(contested!.id, apiKeyId, 2),
      orders.place(taken!.id, apiKeyId, 2),
      orders.place(999_999, apiKeyId, 2),
      orders.place(free!.id, apiKeyId, 2),
    ])
    const [won, lost, refused, missing, neighbour] = settled
    assert.equal(won.status === 'fulfilled' && won.value.outcome, 'placed', 'the first in arrival order wins')
    assert.deepEqual(lost.status === 'fulfilled' && lost.value, { outcome: 'pet_unavailable' })
    assert.equal(refused.status, 'rejected')
    assert.equal((refused as PromiseRejectedResult).reason.code, 'SQLITE_CONSTRAINT_UNIQUE')
    assert.deepEqual(missing.status === 'fulfilled' && missing.value, { outcome: 'no_such_pet' })
    assert.equal(neighbour.status === 'fulfilled' && neighbour.value.outcome, 'placed', 'the operation after the failing one commits')

    assert.equal(committedStatus(contested!.id), 'pending')
    assert.equal(committedOrders(contested!.id), 1)
    // The refused reservation rolled back to its savepoint: its pet update too.
    assert.equal(committedStatus(taken!.id), 'available')
    assert.equal(committedOrders(taken!.id), 1)
    assert.equal(committedStatus(free!.id), 'pending')
    assert.equal(committedOrders(free!.id), 1)
  })

  it('resolves only once committed, and closes an order once however many ask in one batch', async () => {
    const pet = await pets.insert({ name: 'd', categoryId: 1 }, 0)
    // Checked synchronously as each promise resolves: by then another connection sees it.
    const placed = await orders.place(pet.id, apiKeyId, 3).then((result) => {
      assert.equal(committedStatus(pet.id), 'pending')
      assert.equal(committedOrders(pet.id), 1)
      return result
    })
    assert.ok(placed.outcome === 'placed')
    const orderId = placed.row.id
    const results = await Promise.all([
      orders.close(orderId, apiKeyId, 'completed', 'sold', 4),
      orders.close(orderId, apiKeyId, 'cancelled', 'available', 4),
      orders.close(orderId, apiKeyId + 1, 'cancelled', 'available', 4),
    ])
    assert.deepEqual(results.map((r) => r.outcome), ['closed', 'order_closed', 'no_such_order'])
    assert.equal(committedStatus(pet.id), 'sold')
  })
})
