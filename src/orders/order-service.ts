// The store operations (decision D10) for an account: place, read, list, complete and
// cancel its orders, and the inventory. The one service under routes/v1/orders.ts.
//
// An order belongs to the account whose key placed it (decision D11): every key of the
// account sees it, and another account's order is answered as a missing one. The rules
// (one open order per pet, each transition once) are conditional writes in the store,
// in one transaction with the pet's status, on any number of instances: this service
// passes on the store's typed outcomes and adds the time.
import type { Clock } from '../clock.js'
import type { Completion } from '../db/idempotency-store.js'
import type { ClosedStatus, CloseResult, OrdersStore, PlaceResult } from '../db/orders-store.js'
import type { PetsStore } from '../db/pets-store.js'
import type { Inventory, Order, OrderStatus } from '../schemas/order.js'

export interface OrderServiceOptions {
  orders: OrdersStore
  pets: Pick<PetsStore, 'inventory'>
  clock: Clock
}

export interface OrdersPageQuery {
  status?: OrderStatus | undefined
  /** Only orders with a larger id (keyset pagination). */
  afterId: number
  limit: number
}

export type { PlaceResult }

export function createOrderService({ orders, pets, clock }: OrderServiceOptions) {
  return {
    /** Reserves the pet for the account; with `completion`, a placed order is also the Idempotency-Key's answer, in the same transaction. */
    place(accountId: number, petId: number, completion?: Completion): Promise<PlaceResult> {
      return orders.place(petId, accountId, clock.now(), completion)
    },
    /** The account's orders in ascending id order. */
    page(accountId: number, query: OrdersPageQuery): Promise<Order[]> {
      return orders.list({ accountId, ...query })
    },
    get(accountId: number, orderId: number): Promise<Order | undefined> {
      return orders.find(orderId, accountId)
    },
    /** Completes (the pet is sold) or cancels (it is available again) an order still `placed`. */
    close(accountId: number, orderId: number, to: ClosedStatus): Promise<CloseResult> {
      return orders.close(orderId, accountId, to, clock.now())
    },
    inventory(): Promise<Inventory> {
      return pets.inventory()
    },
  }
}

export type OrderService = ReturnType<typeof createOrderService>
