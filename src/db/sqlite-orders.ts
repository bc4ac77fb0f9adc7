// Order placement and closing on SQLite, for the hot path: the same conditional
// UPDATEs as order-repository.ts, as prepared statements run synchronously inside the
// writer's group commit (group-commit.ts). Each operation has a SAVEPOINT of its own,
// so orders_one_open_per_pet refusing one rolls back only that one (its pet goes back
// to `available`); the operations of a group apply in arrival order, so of two
// reservations of one pet in one group the second finds it `pending`.
import type SqliteDatabase from 'better-sqlite3'
import type { GroupCommit } from './group-commit.js'
import type { CloseRowResult, OrderRow, OrderWrites, PlaceRowResult } from './order-writes.js'
import type { PetStatus } from '../schemas/pet.js'

export function createSqliteOrderWrites(writer: SqliteDatabase.Database, groupCommit: GroupCommit): OrderWrites {
  const transitionPet = writer.prepare('UPDATE pets SET status = ? WHERE id = ? AND status = ?')
  const petExists = writer.prepare('SELECT 1 FROM pets WHERE id = ?').pluck()
  const insertOrder = writer.prepare("INSERT INTO orders (pet_id, api_key_id, status, placed_at, closed_at) VALUES (?, ?, 'placed', ?, NULL) RETURNING *")
  const closeOrder = writer.prepare("UPDATE orders SET status = ?, closed_at = ? WHERE id = ? AND api_key_id = ? AND status = 'placed' RETURNING *")
  const orderExists = writer.prepare('SELECT 1 FROM orders WHERE id = ? AND api_key_id = ?').pluck()

  const transition = (id: number, from: PetStatus, to: PetStatus) => transitionPet.run(to, id, from).changes > 0

  return {
    place: (petId, apiKeyId, now) =>
      groupCommit((): PlaceRowResult => {
        if (!transition(petId, 'available', 'pending')) {
          return petExists.get(petId) === undefined ? { outcome: 'no_such_pet' } : { outcome: 'pet_unavailable' }
        }
        return { outcome: 'placed', row: insertOrder.get(petId, apiKeyId, now) as OrderRow }
      }),

    close: (orderId, apiKeyId, to, petTo, now) =>
      groupCommit((): CloseRowResult => {
        const row = closeOrder.get(to, now, orderId, apiKeyId) as OrderRow | undefined
        if (!row) return orderExists.get(orderId, apiKeyId) === undefined ? { outcome: 'no_such_order' } : { outcome: 'order_closed' }
        transition(row.pet_id, 'pending', petTo)
        return { outcome: 'closed', row }
      }),
  }
}
