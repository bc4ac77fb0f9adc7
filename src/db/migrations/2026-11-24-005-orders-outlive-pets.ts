import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// Pets can be deleted (DELETE /v1/pets/{petId}), and the orders that referred to one
// keep its id: orders are a record of what happened. So orders.pet_id no longer
// references pets. A pet with an open order cannot be deleted (checked with the pet
// locked, in pets-store.ts of each backend), and placing an order needs the pet to
// exist and be available (the conditional UPDATE of the pet), so an open order still
// always has its pet.
//
// PostgreSQL drops the constraint by the name the catalog gives it. SQLite cannot drop
// a constraint: the table is made again without it (SQLite's documented procedure for
// other kinds of table schema changes), with its indexes and its AUTOINCREMENT counter.
// Nothing references orders, so no foreign key check is touched.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'postgres') {
    const { rows } = await sql<{ name: string }>`
      select conname as name from pg_constraint
      where conrelid = 'orders'::regclass and contype = 'f' and confrelid = 'pets'::regclass`.execute(db)
    for (const { name } of rows) await sql`alter table orders drop constraint ${sql.id(name)}`.execute(db)
    return
  }
  // Kysely runs SQLite migrations outside a transaction: one of our own, with the write lock.
  await sql`begin immediate`.execute(db)
  try {
    const { rows } = await sql<{ seq: number }>`select seq from sqlite_sequence where name = 'orders'`.execute(db)
    await sql`create table orders_new (
        id integer primary key autoincrement,
        pet_id bigint not null,
        api_key_id bigint not null,
        status text not null check (status in ('placed', 'completed', 'cancelled')),
        placed_at bigint not null,
        closed_at bigint
      )`.execute(db)
    await sql`insert into orders_new (id, pet_id, api_key_id, status, placed_at, closed_at) select id, pet_id, api_key_id, status, placed_at, closed_at from orders`.execute(db)
    await sql`drop table orders`.execute(db)
    await sql`alter table orders_new rename to orders`.execute(db)
    // Ids are never reused: the counter goes on from where the old table's was.
    if (rows[0]) await sql`update sqlite_sequence set seq = max(seq, ${rows[0].seq}) where name = 'orders'`.execute(db)
    await sql`create unique index orders_one_open_per_pet on orders (pet_id) where status = 'placed'`.execute(db)
    await sql`create index orders_api_key_id on orders (api_key_id, id)`.execute(db)
    await sql`create index orders_api_key_status_id on orders (api_key_id, status, id)`.execute(db)
    await sql`commit`.execute(db)
  } catch (error) {
    await sql`rollback`.execute(db).catch(() => {})
    throw error
  }
}
