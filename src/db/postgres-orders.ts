// Order placement and closing on PostgreSQL. The reservations of one event-loop turn
// go in one statement (turn-batcher.ts), as the creates of pets do; a close is one
// statement of its own. Both use data-modifying CTEs, so one round trip and one
// transaction instead of BEGIN, statements and COMMIT. The conditional UPDATEs are
// order-repository.ts's: of racing requests, the first to lock the row moves it, and
// the others, re-checking the row once it commits (READ COMMITTED), find it moved
// and change nothing.
import type pg from 'pg'
import { isUniqueViolation } from './database.js'
import type { OrderRow, OrderWrites, PlaceRowResult } from './order-writes.js'
import { createTurnBatcher, type BatchItem } from './turn-batcher.js'

// Every data-modifying CTE runs to completion, read or not: the pet moves in the same statement.
const CLOSE = {
  name: 'petstore_orders_close',
  text: `WITH closed AS (
      UPDATE orders SET status = $1, closed_at = $2 WHERE id = $3 AND api_key_id = $4 AND status = 'placed' RETURNING *
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
      SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS a(pet_id, api_key_id, placed_at, n)
    ), first_asks AS (
      SELECT DISTINCT ON (pet_id) pet_id, api_key_id, placed_at, n FROM asked ORDER BY pet_id, n
    ), locked AS (
      SELECT id FROM pets WHERE id IN (SELECT pet_id FROM first_asks) AND status = 'available' ORDER BY id FOR UPDATE
    ), reserved AS (
      UPDATE pets SET status = 'pending' FROM locked WHERE pets.id = locked.id AND pets.status = 'available' RETURNING pets.id
    )
    INSERT INTO orders (pet_id, api_key_id, status, placed_at, closed_at)
    SELECT f.pet_id, f.api_key_id, 'placed', f.placed_at, NULL FROM first_asks f JOIN reserved r ON r.id = f.pet_id ORDER BY f.n
    RETURNING *`,
}
const PETS_EXISTING = { name: 'petstore_pets_existing', text: 'SELECT id FROM pets WHERE id = ANY($1::bigint[])' }
const ORDER_EXISTS = { name: 'petstore_orders_exists', text: 'SELECT 1 FROM orders WHERE id = $1 AND api_key_id = $2' }

interface Reservation {
  petId: number
  apiKeyId: number
  now: number
}

export function createPostgresOrderWrites(pool: pg.Pool): OrderWrites {
  const exists = async (query: pg.QueryConfig) => ((await pool.query(query)).rowCount ?? 0) > 0

  async function place(batch: BatchItem<Reservation, PlaceRowResult>[]): Promise<void> {
    const asked = batch.map((item) => item.input)
    let placed: OrderRow[]
    try {
      const values = [asked.map((r) => r.petId), asked.map((r) => r.apiKeyId), asked.map((r) => r.now)]
      placed = (await pool.query<OrderRow>({ ...PLACE, values })).rows
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
        item.resolve({ outcome: 'placed', row })
      } else refused.push(item)
    }
    if (refused.length === 0) return
    // Nothing was written for these; this read only tells the two refusals apart.
    const { rows } = await pool.query<{ id: number }>({ ...PETS_EXISTING, values: [refused.map((item) => item.input.petId)] })
    const existing = new Set(rows.map((row) => row.id))
    for (const item of refused) item.resolve(existing.has(item.input.petId) ? { outcome: 'pet_unavailable' } : { outcome: 'no_such_pet' })
  }
  // One statement at a time, as the creates of pets: the reservations arriving meanwhile make the next one larger.
  const reserve = createTurnBatcher(place)

  return {
    place: (petId, apiKeyId, now) => reserve({ petId, apiKeyId, now }),
    async close(orderId, apiKeyId, to, petTo, now) {
      const { rows } = await pool.query<OrderRow>({ ...CLOSE, values: [to, now, orderId, apiKeyId, petTo] })
      if (rows[0]) return { outcome: 'closed', row: rows[0] }
      return (await exists({ ...ORDER_EXISTS, values: [orderId, apiKeyId] })) ? { outcome: 'order_closed' } : { outcome: 'no_such_order' }
    },
  }
}
