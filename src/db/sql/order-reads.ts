// Reading orders, written once in Kysely for both databases, and the one mapping of
// an orders row to the API's Order. The writes are each backend's own
// (sqlite/orders-store.ts, postgres/orders-store.ts).
import type { Kysely, Selectable } from 'kysely'
import type { Database, OrdersTable } from '../schema.js'
import type { OrdersStore } from '../orders-store.js'
import type { Order, OrderStatus } from '../../schemas/order.js'

export type OrderRow = Selectable<OrdersTable>

export function createOrderReads(db: Kysely<Database>): Pick<OrdersStore, 'find' | 'list'> {
  return {
    async find(orderId, accountId) {
      const row = await db.selectFrom('orders').selectAll().where('id', '=', orderId).where('account_id', '=', accountId).executeTakeFirst()
      return row && toOrder(row)
    },

    async list({ accountId, status, afterId, limit }) {
      let query = db.selectFrom('orders').selectAll().where('account_id', '=', accountId).where('id', '>', afterId)
      if (status) query = query.where('status', '=', status)
      return (await query.orderBy('id').limit(limit).execute()).map(toOrder)
    },
  }
}

/** Maps an orders row to the API's Order: the one place that does. */
export function toOrder(row: OrderRow): Order {
  const order: Order = { id: row.id, petId: row.pet_id, status: row.status as OrderStatus, placedAt: new Date(row.placed_at).toISOString() }
  if (row.closed_at !== null) order.closedAt = new Date(row.closed_at).toISOString()
  return order
}
