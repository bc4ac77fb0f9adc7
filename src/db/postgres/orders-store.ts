// The orders store on PostgreSQL. The reservations of one event-loop turn go in one
// statement (batching/turn-batcher.ts), as the creates of pets do; a close is one
// statement of its own. Both use data-modifying CTEs, so one round trip and one
// transaction instead of BEGIN, statements and COMMIT, and both are conditional
// UPDATEs: of racing requests, the first to lock the row moves it, and the others,
// re-checking the row once it commits (READ COMMITTED), find it moved and change
// nothing. A reservation with an Idempotency-Key runs the same statement for its one
// pet in a transaction of its own, with the response it stores. Reads are
// sql/order-reads.ts.
import type pg from 'pg'
import type { Kysely } from 'kysely'
import { createTurnBatcher, type BatchItem } from '../batching/turn-batcher.js'
import type { Completion } from '../idempotency-store.js'
import { CLOSING, type OrdersStore, type PlaceResult } from '../orders-store.js'
import type { Database } from '../schema.js'
import { isUniqueViolation } from '../store-errors.js'
import { createOrderReads, toOrder, type OrderRow } from '../sql/order-reads.js'
import { completeClaim } from './idempotency.js'
import { inTransaction } from './transaction.js'
import type { OrderStatus } from '../../schemas/order.js'
import type { PetStatus } from '../../schemas/pet.js'

// Every data-modifying CTE runs to completion, read or not: the pet moves in the same statement.
const CLOSE = {
  name: 'petstore_orders_close',
  text: `WITH closed AS (
      UPDATE orders SET status = $1, closed_at = $2 WHERE id = $3 AND account_id = $4 AND status = 'placed' RETURNING *
    ), moved AS (
      UPDATE pets SET status = $5 WHERE id = (SELECT pet_id FROM closed) AND status = 'pending'
    )
    SELECT * FROM closed`,
}
// The reservations of a turn (one, when the server is idle), in arrival order ($1 pet
// ids, $2 key ids, $3 times). Of several asking for one pet, the first (DISTINCT ON … ORDER BY n) is the one a run of
// its own would have let through; the others find the pet pending. The pets are locked
// in id order, so that two instances' statements cannot deadlock on them. The orders
// are inserted in arrival order, so their ids increase in it.
const PLACE = {
  name: 'petstore_orders_place',
  text: `WITH asked AS (
      SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS a(pet_id, account_id, placed_at, n)
    ), first_asks AS (
      SELECT DISTINCT ON (pet_id) pet_id, account_id, placed_at, n FROM asked ORDER BY pet_id, n
    ), locked AS (
      SELECT id FROM pets WHERE id IN (SELECT pet_id FROM first_asks) AND status = 'available' ORDER BY id FOR UPDATE
    ), reserved AS (
      UPDATE pets SET status = 'pending' FROM locked WHERE pets.id = locked.id AND pets.status = 'available' RETURNING pets.id
    )
    INSERT INTO orders (pet_id, account_id, status, placed_at, closed_at)
    SELECT f.pet_id, f.account_id, 'placed', f.placed_at, NULL FROM first_asks f JOIN reserved r ON r.id = f.pet_id ORDER BY f.n
    RETURNING *`,
}
const PETS_EXISTING = { name: 'petstore_pets_existing', text: 'SELECT id, status FROM pets WHERE id = ANY($1::bigint[])' }
const ORDER_STATUS = { name: 'petstore_orders_status', text: 'SELECT status FROM orders WHERE id = $1 AND account_id = $2' }

interface Reservation {
  petId: number
  accountId: number
  now: number
}

const placeValues = (asked: readonly Reservation[]) => [asked.map((r) => r.petId), asked.map((r) => r.accountId), asked.map((r) => r.now)]

export function createPostgresOrdersStore(db: Kysely<Database>, pool: pg.Pool): OrdersStore {
  async function place(batch: BatchItem<Reservation, PlaceResult>[]): Promise<void> {
    let placed: OrderRow[]
    try {
      placed = (await pool.query<OrderRow>({ ...PLACE, values: placeValues(batch.map((item) => item.input)) })).rows
    } catch (error) {
      if (!isUniqueViolation(error) || batch.length === 1) throw error
      // orders_one_open_per_pet refused one of them (a pet whose status was changed by
      // hand while its order is open), and with it the statement: each on its own, in
      // arrival order, so that only that one fails.
      for (const item of batch) await place([item]).catch(item.reject)
      return
    }
    // Committed. Each pet's order goes to the first request for it.
    const byPet = new Map(placed.map((row) => [row.pet_id, row]))
    const refused: typeof batch = []
    for (const item of batch) {
      const row = byPet.get(item.input.petId)
      if (row) {
        byPet.delete(item.input.petId)
        item.resolve({ outcome: 'placed', order: toOrder(row) })
      } else refused.push(item)
    }
    if (refused.length === 0) return
    const existing = await existingPets(pool, refused.map((item) => item.input.petId))
    for (const item of refused) item.resolve(refusal(existing, item.input.petId))
  }
  // One statement at a time, as the creates of pets: the reservations arriving meanwhile make the next one larger.
  const reserve = createTurnBatcher(place)

  /** The same statement for one reservation, in a transaction that also stores the Idempotency-Key's response. */
  const placeCompleting = (reservation: Reservation, completion: Completion) =>
    inTransaction(pool, async (client): Promise<PlaceResult> => {
      const [row] = (await client.query<OrderRow>({ ...PLACE, values: placeValues([reservation]) })).rows
      if (!row) return refusal(await existingPets(client, [reservation.petId]), reservation.petId)
      const order = toOrder(row)
      await completeClaim(client, completion, order)
      return { outcome: 'placed', order }
    })

  return {
    ...createOrderReads(db),

    place: (petId, accountId, now, completion) =>
      (completion ? placeCompleting({ petId, accountId, now }, completion) : reserve({ petId, accountId, now })).catch(refusedIfTaken),

    async close(orderId, accountId, to, now) {
      const { rows } = await pool.query<OrderRow>({ ...CLOSE, values: [to, now, orderId, accountId, CLOSING[to]] })
      if (rows[0]) return { outcome: 'closed', order: toOrder(rows[0]) }
      const [order] = (await pool.query<{ status: OrderStatus }>({ ...ORDER_STATUS, values: [orderId, accountId] })).rows
      return order ? { outcome: 'order_closed', status: order.status } : { outcome: 'no_such_order' }
    },
  }
}

/** The status of each of `ids` that is a pet. Nothing was written for a refused reservation; this read only tells the refusals apart. */
async function existingPets(db: pg.Pool | pg.PoolClient, ids: number[]): Promise<Map<number, PetStatus>> {
  const { rows } = await db.query<{ id: number; status: PetStatus }>({ ...PETS_EXISTING, values: [ids] })
  return new Map(rows.map((row) => [row.id, row.status]))
}

function refusal(existing: Map<number, PetStatus>, petId: number): PlaceResult {
  const status = existing.get(petId)
  return status === undefined ? { outcome: 'no_such_pet' } : { outcome: 'pet_unavailable', status }
}

/** orders_one_open_per_pet refused the order (a pet whose status was changed by hand while its order is open): nothing was written, and the pet is unavailable all the same. */
function refusedIfTaken(error: unknown): PlaceResult {
  if (isUniqueViolation(error)) return { outcome: 'pet_unavailable', status: 'pending' }
  throw error
}
