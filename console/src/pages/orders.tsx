// Orders: this account's orders by status, reserve a pet by id, complete or cancel a placed one.
import { useEffect, useState } from 'preact/hooks'
import type { Order, OrderStatus, Page } from '../api.js'
import { ActionButton, formatTime, missingScope, NeedsScope, Outcome, Pager, StatusFilter, useCursors, useSession } from '../ui.js'

const STATUSES: OrderStatus[] = ['placed', 'completed', 'cancelled']

export function Orders() {
  return (
    <NeedsScope operation="listOrders">
      <OrderList />
    </NeedsScope>
  )
}

function OrderList() {
  const session = useSession()
  const { api } = session
  const [status, setStatus] = useState<OrderStatus | ''>('')
  const pages = useCursors()
  const { cursor, reset } = pages
  const [page, setPage] = useState<Page<Order>>()
  const [error, setError] = useState<unknown>()
  const [done, setDone] = useState<string>()
  const [petId, setPetId] = useState('')
  const missingWrite = missingScope(session, 'placeOrder')

  const load = async () => {
    try {
      setPage(await api.listOrders({ status: status || undefined, cursor }))
    } catch (failure) {
      setError(failure)
    }
  }
  useEffect(() => {
    void load()
  }, [status, cursor])

  const act = async (what: () => Promise<Order>, message: (order: Order) => string) => {
    try {
      const order = await what()
      // The list first, then the message: what it says is on the page when it shows.
      await load()
      setDone(message(order))
      setError(undefined)
    } catch (failure) {
      setDone(undefined)
      setError(failure)
    }
  }

  return (
    <section aria-labelledby="orders">
      <form
        aria-label="Reserve a pet"
        onSubmit={(event) => {
          event.preventDefault()
          void act(() => api.placeOrder(Number(petId)), (order) => `Order ${order.id} placed: pet ${order.petId} is reserved.`)
        }}
      >
        <label>
          Pet id
          <input type="number" min={1} required value={petId} disabled={missingWrite !== undefined} onInput={(e) => setPetId(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={missingWrite !== undefined} title={missingWrite && `Needs the ${missingWrite} scope`}>
          Reserve{missingWrite && <span class="needs"> (needs {missingWrite})</span>}
        </button>
      </form>
      <h2 id="orders">Orders</h2>
      <StatusFilter
        statuses={STATUSES}
        value={status}
        onChange={(next) => {
          setStatus(next)
          reset()
        }}
      />
      <Outcome done={done} error={error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Id</th>
            <th scope="col">Pet</th>
            <th scope="col">Status</th>
            <th scope="col">Placed</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {page?.items.map((order) => (
            <tr key={order.id} data-order-id={order.id}>
              <td>{order.id}</td>
              <td>{order.petId}</td>
              <td>{order.status}</td>
              <td>{formatTime(order.placedAt)}</td>
              <td>
                {order.status === 'placed' && (
                  <>
                    <ActionButton operation="completeOrder" label={`Complete order ${order.id}`} onClick={() => act(() => api.completeOrder(order.id), (o) => `Order ${o.id} completed: pet ${o.petId} is sold.`)}>
                      Complete
                    </ActionButton>{' '}
                    <ActionButton operation="cancelOrder" label={`Cancel order ${order.id}`} onClick={() => act(() => api.cancelOrder(order.id), (o) => `Order ${o.id} cancelled: pet ${o.petId} is available again.`)}>
                      Cancel
                    </ActionButton>
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager label="Pages of orders" pages={pages} nextCursor={page?.nextCursor} />
    </section>
  )
}
