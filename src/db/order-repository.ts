// Store orders (decision D10). Every change is a conditional UPDATE inside the
// caller's transaction, together with the pet's status change: of any number of
// concurrent requests, on any number of instances, one wins and the others find the
// row already changed. Nothing is checked in JavaScript and then written.
import type { Kysely, Selectable } from 'kysely'
import type { Database, OrdersTable } from './schema.js'
import type { PetsStore } from './pets-store.js'
import type { OrderWrites } from './order-writes.js'
import type { Order, OrderStatus } from '../schemas/order.js'

export interface ListOrdersQuery {
  apiKeyId: number
  status?: OrderStatus | undefined
  /** Only orders with a larger id (keyset pagination). */
  afterId: number
  limit: number
}

export type PlaceResult = { outcome: 'placed'; order: Order } | { outcome: 'no_such_pet' } | { outcome: 'pet_unavailable' }
export type CloseResult = { outcome: 'closed'; order: Order } | { outcome: 'no_such_order' } | { outcome: 'order_closed' }

/** What closing an order does to its pet. */
const CLOSING = { completed: 'sold', cancelled: 'available' } as const

export type OrderRepository = ReturnType<typeof createOrderRepository>

export interface OrderRepositoryOptions {
  /** Placement and closing outside a caller's transaction, the database's fast way (order-writes.ts). */
  writes: OrderWrites
}

export function createOrderRepository(db: Kysely<Database>, pets: PetsStore, { writes }: OrderRepositoryOptions) {
  const repository = {
    /** Inside `trx`: reserves an available pet (it becomes `pending`) and records the order. */
    async place(trx: Kysely<Database>, petId: number, apiKeyId: number, now: number): Promise<PlaceResult> {
      if (!(await pets.transition(trx, petId, 'available', 'pending'))) {
        // Nothing was written; this read only tells the two refusals apart.
        return (await pets.findIn(trx, petId)) ? { outcome: 'pet_unavailable' } : { outcome: 'no_such_pet' }
      }
      // orders_one_open_per_pet refuses a second open order even if the pet's status
      // said otherwise (changed by hand); the error rolls the transaction back.
      const row = await trx
        .insertInto('orders')
        .values({ pet_id: petId, api_key_id: apiKeyId, status: 'placed', placed_at: now, closed_at: null })
        .returningAll()
        .executeTakeFirstOrThrow()
      return { outcome: 'placed', order: toOrder(row) }
    },

    /** Inside `trx`: closes an order of `apiKeyId` that is still `placed`, and moves its pet on. */
    async close(trx: Kysely<Database>, orderId: number, apiKeyId: number, to: keyof typeof CLOSING, now: number): Promise<CloseResult> {
      const row = await trx
        .updateTable('orders')
        .set({ status: to, closed_at: now })
        .where('id', '=', orderId)
        .where('api_key_id', '=', apiKeyId)
        .where('status', '=', 'placed')
        .returningAll()
        .executeTakeFirst()
      if (!row) return (await findOrder(trx, orderId, apiKeyId)) ? { outcome: 'order_closed' } : { outcome: 'no_such_order' }
      // The pet of an open order is `pending` (both change in one transaction); the
      // condition keeps a pet someone changed by hand as it is rather than guessing.
      await pets.transition(trx, row.pet_id, 'pending', CLOSING[to])
      return { outcome: 'closed', order: toOrder(row) }
    },

    /** The order, if it exists and belongs to `apiKeyId`. */
    find: (orderId: number, apiKeyId: number) => findOrder(db, orderId, apiKeyId),

    /** Orders of `apiKeyId` in ascending id order. */
    async list({ apiKeyId, status, afterId, limit }: ListOrdersQuery): Promise<Order[]> {
      let query = db.selectFrom('orders').selectAll().where('api_key_id', '=', apiKeyId).where('id', '>', afterId)
      if (status) query = query.where('status', '=', status)
      return (await query.orderBy('id').limit(limit).execute()).map(toOrder)
    },

    /**
     * `place` in a transaction of its own; resolves once committed. On SQLite, in the
     * writer's group commit (one commit for every write of the event-loop turn); on
     * PostgreSQL, in one statement.
     */
    async placeAlone(petId: number, apiKeyId: number, now: number): Promise<PlaceResult> {
      const result = await writes.place(petId, apiKeyId, now)
      return result.outcome === 'placed' ? { outcome: 'placed', order: toOrder(result.row) } : result
    },

    /** `close` in a transaction of its own; resolves once committed (as placeAlone). */
    async closeAlone(orderId: number, apiKeyId: number, to: keyof typeof CLOSING, now: number): Promise<CloseResult> {
      const result = await writes.close(orderId, apiKeyId, to, CLOSING[to], now)
      return result.outcome === 'closed' ? { outcome: 'closed', order: toOrder(result.row) } : result
    },
  }
  return repository
}

async function findOrder(db: Kysely<Database>, orderId: number, apiKeyId: number): Promise<Order | undefined> {
  const row = await db.selectFrom('orders').selectAll().where('id', '=', orderId).where('api_key_id', '=', apiKeyId).executeTakeFirst()
  return row && toOrder(row)
}

/** Maps an orders row to the API's Order: the one place that does. */
function toOrder(row: Selectable<OrdersTable>): Order {
  const order: Order = { id: row.id, petId: row.pet_id, status: row.status as OrderStatus, placedAt: new Date(row.placed_at).toISOString() }
  if (row.closed_at !== null) order.closedAt = new Date(row.closed_at).toISOString()
  return order
}
