// Placing and closing an order in a transaction of its own, the fast way each
// database allows: SQLite in the writer's group commit (sqlite-orders.ts),
// PostgreSQL in one statement (postgres-orders.ts). Same conditional UPDATEs as
// order-repository.ts, whose Kysely versions run inside a caller's transaction (an
// Idempotency-Key's).
import type { Selectable } from 'kysely'
import type { OrdersTable } from './schema.js'
import type { PetStatus } from '../schemas/pet.js'

export type OrderRow = Selectable<OrdersTable>
export type PlaceRowResult = { outcome: 'placed'; row: OrderRow } | { outcome: 'no_such_pet' } | { outcome: 'pet_unavailable' }
export type CloseRowResult = { outcome: 'closed'; row: OrderRow } | { outcome: 'no_such_order' } | { outcome: 'order_closed' }

export interface OrderWrites {
  /** Reserves an available pet and records the order; resolves once committed. orders_one_open_per_pet refusing it rejects. */
  place(petId: number, apiKeyId: number, now: number): Promise<PlaceRowResult>
  /** Closes an order of `apiKeyId` that is still `placed` and moves its pet from `pending` to `petTo`; resolves once committed. */
  close(orderId: number, apiKeyId: number, to: 'completed' | 'cancelled', petTo: PetStatus, now: number): Promise<CloseRowResult>
}
