import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// Store orders (decision D10): one row per reservation of a pet, owned by the API key
// that placed it. The database, not the code, keeps a pet to one open order: a
// partial unique index on pet_id over the rows still `placed` (both SQLite and
// PostgreSQL have them).
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('orders')
    .addColumn('id', dialect === 'sqlite' ? 'integer' : 'bigint', (col) =>
      dialect === 'sqlite' ? col.primaryKey().autoIncrement() : col.primaryKey().generatedAlwaysAsIdentity(),
    )
    .addColumn('pet_id', 'bigint', (col) => col.notNull().references('pets.id'))
    .addColumn('api_key_id', 'bigint', (col) => col.notNull())
    .addColumn('status', 'text', (col) => col.notNull().check(sql`status in ('placed', 'completed', 'cancelled')`))
    .addColumn('placed_at', 'bigint', (col) => col.notNull())
    .addColumn('closed_at', 'bigint')
    .execute()
  await sql`create unique index orders_one_open_per_pet on orders (pet_id) where status = 'placed'`.execute(db)
  // A key's orders, newest last, optionally by status (keyset pagination by id).
  await db.schema.createIndex('orders_api_key_id').on('orders').columns(['api_key_id', 'id']).execute()
  await db.schema.createIndex('orders_api_key_status_id').on('orders').columns(['api_key_id', 'status', 'id']).execute()
}
