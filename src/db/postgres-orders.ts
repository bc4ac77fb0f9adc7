// Order placement and closing on PostgreSQL: each in one statement (data-modifying
// CTEs), so one round trip and one transaction instead of BEGIN, two statements and
// COMMIT. The conditional UPDATEs are order-repository.ts's: of racing requests, the
// first to lock the row moves it, and the others, re-checking the row once it
// commits (READ COMMITTED), find it moved and change nothing.
import type pg from 'pg'
import type { OrderRow, OrderWrites } from './order-writes.js'

const PLACE = {
  name: 'petstore_orders_place',
  text: `WITH reserved AS (
      UPDATE pets SET status = 'pending' WHERE id = $1 AND status = 'available' RETURNING id
    )
    INSERT INTO orders (pet_id, api_key_id, status, placed_at, closed_at)
    SELECT id, $2, 'placed', $3, NULL FROM reserved
    RETURNING *`,
}
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
const PET_EXISTS = { name: 'petstore_pets_exists', text: 'SELECT 1 FROM pets WHERE id = $1' }
const ORDER_EXISTS = { name: 'petstore_orders_exists', text: 'SELECT 1 FROM orders WHERE id = $1 AND api_key_id = $2' }

export function createPostgresOrderWrites(pool: pg.Pool): OrderWrites {
  const exists = async (query: pg.QueryConfig) => ((await pool.query(query)).rowCount ?? 0) > 0
  return {
    async place(petId, apiKeyId, now) {
      const { rows } = await pool.query<OrderRow>({ ...PLACE, values: [petId, apiKeyId, now] })
      if (rows[0]) return { outcome: 'placed', row: rows[0] }
      // Nothing was written; this read only tells the two refusals apart.
      return (await exists({ ...PET_EXISTS, values: [petId] })) ? { outcome: 'pet_unavailable' } : { outcome: 'no_such_pet' }
    },
    async close(orderId, apiKeyId, to, petTo, now) {
      const { rows } = await pool.query<OrderRow>({ ...CLOSE, values: [to, now, orderId, apiKeyId, petTo] })
      if (rows[0]) return { outcome: 'closed', row: rows[0] }
      return (await exists({ ...ORDER_EXISTS, values: [orderId, apiKeyId] })) ? { outcome: 'order_closed' } : { outcome: 'no_such_order' }
    },
  }
}
