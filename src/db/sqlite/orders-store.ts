// The orders store on SQLite. Placing and closing are conditional UPDATEs, as
// prepared statements run synchronously inside the writer's group commit
// (batching/group-commit.ts): nothing is checked in JavaScript and then written.
// Each operation has a SAVEPOINT of its own, so orders_one_open_per_pet refusing one
// rolls back only that one (its pet goes back to `available`); the operations of a
// group apply in arrival order, so of two reservations of one pet in one group the
// second finds it `pending`. Reads are sql/order-reads.ts.
import type SqliteDatabase from 'better-sqlite3'
import type { Kysely } from 'kysely'
import type { GroupCommit } from '../batching/group-commit.js'
import { CLOSING, type CloseResult, type OrdersStore, type PlaceResult } from '../orders-store.js'
import type { Database } from '../schema.js'
import { isUniqueViolation } from '../store-errors.js'
import { createOrderReads, toOrder, type OrderRow } from '../sql/order-reads.js'
import type { CompleteClaim } from './idempotency.js'
import type { OrderStatus } from '../../schemas/order.js'
import type { PetStatus } from '../../schemas/pet.js'

export interface SqliteOrdersStoreOptions {
  db: Kysely<Database>
  writer: SqliteDatabase.Database
  groupCommit: GroupCommit
  completeClaim: CompleteClaim
}

export function createSqliteOrdersStore({ db, writer, groupCommit, completeClaim }: SqliteOrdersStoreOptions): OrdersStore {
  const transitionPet = writer.prepare('UPDATE pets SET status = ? WHERE id = ? AND status = ?')
  const petStatus = writer.prepare('SELECT status FROM pets WHERE id = ?').pluck()
  const insertOrder = writer.prepare("INSERT INTO orders (pet_id, account_id, status, placed_at, closed_at) VALUES (?, ?, 'placed', ?, NULL) RETURNING *")
  const closeOrder = writer.prepare("UPDATE orders SET status = ?, closed_at = ? WHERE id = ? AND account_id = ? AND status = 'placed' RETURNING *")
  const orderStatus = writer.prepare('SELECT status FROM orders WHERE id = ? AND account_id = ?').pluck()

  const transition = (id: number, from: PetStatus, to: PetStatus) => transitionPet.run(to, id, from).changes > 0

  return {
    ...createOrderReads(db),

    place: (petId, accountId, now, completion) =>
      groupCommit((): PlaceResult => {
        if (!transition(petId, 'available', 'pending')) {
          // Nothing was written; this read only tells the refusals apart.
          const status = petStatus.get(petId) as PetStatus | undefined
          return status === undefined ? { outcome: 'no_such_pet' } : { outcome: 'pet_unavailable', status }
        }
        const order = toOrder(insertOrder.get(petId, accountId, now) as OrderRow)
        if (completion) completeClaim(completion, order)
        return { outcome: 'placed', order }
      }).catch(refusedIfTaken),

    close: (orderId, accountId, to, now) =>
      groupCommit((): CloseResult => {
        const row = closeOrder.get(to, now, orderId, accountId) as OrderRow | undefined
        if (!row) {
          const status = orderStatus.get(orderId, accountId) as OrderStatus | undefined
          return status === undefined ? { outcome: 'no_such_order' } : { outcome: 'order_closed', status }
        }
        // The pet of an open order is `pending` (both change in one transaction); the
        // condition keeps a pet someone changed by hand as it is rather than guessing.
        transition(row.pet_id, 'pending', CLOSING[to])
        return { outcome: 'closed', order: toOrder(row) }
      }),
  }
}

/**
 * orders_one_open_per_pet refused the order (a pet whose status was changed by hand
 * while its order is open): the operation was rolled back to its savepoint, and the
 * pet is unavailable all the same.
 */
function refusedIfTaken(error: unknown): PlaceResult {
  if (isUniqueViolation(error)) return { outcome: 'pet_unavailable', status: 'pending' }
  throw error
}
