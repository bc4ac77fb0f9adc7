// The orders store on SQLite. Placing and closing are conditional UPDATEs, as
// prepared statements run synchronously inside the writer's group commit
// (batching/group-commit.ts): nothing is checked in JavaScript and then written.
// Each operation has a SAVEPOINT of its own, so orders_one_open_per_pet refusing one
// rolls back only that one (its pet goes back to `available`); the operations of a
// group apply in arrival order, so of two reservations of one pet in one group the
// second finds it `pending`. Reservations go in together (group-commit.ts): the
// group's pets taken in one UPDATE … WHERE id IN, its orders written in one multi-row
// INSERT, for a quarter of the SQLite work one statement each cost (docs/benchmarks.md).
// Reads are sql/order-reads.ts.
import type SqliteDatabase from 'better-sqlite3'
import type { Kysely } from 'kysely'
import type { GroupCommit } from '../batching/group-commit.js'
import { CLOSING, type CloseResult, type OrdersStore, type PlaceResult } from '../orders-store.js'
import type { Database } from '../schema.js'
import { isUniqueViolation } from '../store-errors.js'
import { createOrderReads, toOrder, type OrderRow } from '../sql/order-reads.js'
import type { CompleteClaim } from './idempotency.js'
import type { Completion } from '../idempotency-store.js'
import { chunks, marks, statementsByRows } from './statements-by-rows.js'
import type { OrderStatus } from '../../schemas/order.js'
import type { PetStatus } from '../../schemas/pet.js'

export interface SqliteOrdersStoreOptions {
  db: Kysely<Database>
  writer: SqliteDatabase.Database
  groupCommit: GroupCommit
  completeClaim: CompleteClaim
}

interface Placement {
  petId: number
  accountId: number
  now: number
  completion: Completion | undefined
}

export function createSqliteOrdersStore({ db, writer, groupCommit, completeClaim }: SqliteOrdersStoreOptions): OrdersStore {
  const transitionPet = writer.prepare('UPDATE pets SET status = ? WHERE id = ? AND status = ?')
  const petStatus = writer.prepare('SELECT status FROM pets WHERE id = ?').pluck()
  const insertOrder = writer.prepare("INSERT INTO orders (pet_id, account_id, status, placed_at, closed_at) VALUES (?, ?, 'placed', ?, NULL) RETURNING *")
  const closeOrder = writer.prepare("UPDATE orders SET status = ?, closed_at = ? WHERE id = ? AND account_id = ? AND status = 'placed' RETURNING *")
  const orderStatus = writer.prepare('SELECT status FROM orders WHERE id = ? AND account_id = ?').pluck()

  const transition = (id: number, from: PetStatus, to: PetStatus) => transitionPet.run(to, id, from).changes > 0
  /** The placement's order, its Idempotency-Key claim completed in the same operation. */
  const placedAs = (row: OrderRow, completion: Completion | undefined): PlaceResult => {
    const order = toOrder(row)
    if (completion) completeClaim(completion, order)
    return { outcome: 'placed', order }
  }
  // Nothing was written for it; this read only tells the refusals apart.
  const refusal = (petId: number): PlaceResult => {
    const status = petStatus.get(petId) as PetStatus | undefined
    return status === undefined ? { outcome: 'no_such_pet' } : { outcome: 'pet_unavailable', status }
  }
  const takeMany = statementsByRows(writer, (rows) => `UPDATE pets SET status = 'pending' WHERE status = 'available' AND id IN (${marks(rows, '?')}) RETURNING id`, true)
  const insertMany = statementsByRows(writer, (rows) => `INSERT INTO orders (pet_id, account_id, status, placed_at, closed_at) VALUES ${marks(rows, "(?, ?, 'placed', ?, NULL)")} RETURNING *`)

  const place = groupCommit.together<Placement, PlaceResult>({
    all(placements) {
      // Each pet goes to the first placement that asks for it, as one by one in arrival order.
      const taken = new Set<number>()
      for (const ids of chunks([...new Set(placements.map((p) => p.petId))])) {
        for (const id of takeMany(ids.length).all(...ids) as number[]) taken.add(id)
      }
      const placed = new Set(placements.filter((p) => taken.delete(p.petId)))
      const orders = new Map<number, OrderRow>()
      for (const rows of chunks([...placed])) {
        for (const row of insertMany(rows.length).all(...rows.flatMap((p) => [p.petId, p.accountId, p.now])) as OrderRow[]) orders.set(row.pet_id, row)
      }
      return placements.map((p) => {
        const row = placed.has(p) ? orders.get(p.petId) : undefined
        return row ? placedAs(row, p.completion) : refusal(p.petId)
      })
    },
    one({ petId, accountId, now, completion }) {
      if (!transition(petId, 'available', 'pending')) return refusal(petId)
      return placedAs(insertOrder.get(petId, accountId, now) as OrderRow, completion)
    },
  })

  return {
    ...createOrderReads(db),

    place: (petId, accountId, now, completion) => place({ petId, accountId, now, completion }).catch(refusedIfTaken),

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
