// The orders store: what the rest of the service may do with orders (decision D10).
// One implementation per database (sqlite/orders-store.ts, postgres/orders-store.ts);
// the reads, written once for both, are sql/order-reads.ts.
import type { Order, OrderStatus } from '../schemas/order.js'
import type { PetStatus } from '../schemas/pet.js'
import type { Completion } from './idempotency-store.js'

export interface ListOrdersQuery {
  accountId: number
  status?: OrderStatus | undefined
  /** Only orders with a larger id (keyset pagination). */
  afterId: number
  limit: number
}

/** A reservation's outcome; a refusal wrote nothing. */
export type PlaceResult =
  | { outcome: 'placed'; order: Order }
  | { outcome: 'no_such_pet' }
  /** `status`: what the pet is instead (`pending`: reserved in another order; `sold`), so that the refusal can say so. */
  | { outcome: 'pet_unavailable'; status: PetStatus }
/** Closing's outcome; a refusal wrote nothing. */
export type CloseResult =
  | { outcome: 'closed'; order: Order }
  | { outcome: 'no_such_order' }
  /** `status`: how the order was closed before. */
  | { outcome: 'order_closed'; status: OrderStatus }

/** How an order is closed, and what that does to its pet. */
export const CLOSING = { completed: 'sold', cancelled: 'available' } as const
export type ClosedStatus = keyof typeof CLOSING

export interface OrdersStore {
  /**
   * Reserves an available pet (it becomes `pending`) and records the order, in one
   * transaction; resolves once committed. Of any number of concurrent calls for one
   * pet, on any number of instances, one is placed and the others are refused
   * `pet_unavailable`. With `completion`, a placed order is also stored as the
   * Idempotency-Key's response in that same transaction (a refusal stores nothing).
   */
  place(petId: number, accountId: number, now: number, completion?: Completion): Promise<PlaceResult>
  /** Closes an order of `accountId` that is still `placed` and moves its pet on (CLOSING), in one transaction; resolves once committed. */
  close(orderId: number, accountId: number, to: ClosedStatus, now: number): Promise<CloseResult>
  /** The order, if it exists and belongs to `accountId`. */
  find(orderId: number, accountId: number): Promise<Order | undefined>
  /** Orders of `accountId` in ascending id order. */
  list(query: ListOrdersQuery): Promise<Order[]>
}
