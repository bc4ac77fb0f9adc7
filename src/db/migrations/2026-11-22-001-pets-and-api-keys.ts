import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// Migrations see the schema as it was when they were written, not today's
// Database type, so they take an untyped Kysely (as Kysely's docs advise).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  // Ids only ever increase and are never reused: AUTOINCREMENT in SQLite, an identity in PostgreSQL.
  const idType = dialect === 'sqlite' ? 'integer' : 'bigint'
  await db.schema
    .createTable('pets')
    .addColumn('id', idType, (col) =>
      dialect === 'sqlite' ? col.primaryKey().autoIncrement() : col.primaryKey().generatedAlwaysAsIdentity(),
    )
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('category_id', 'bigint', (col) => col.notNull())
    .addColumn('status', 'text', (col) => col.notNull().check(sql`status in ('available', 'pending', 'sold')`))
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .execute()
  // Keyset pagination by status: WHERE status = ? AND id > ? ORDER BY id.
  await db.schema.createIndex('pets_status_id').on('pets').columns(['status', 'id']).execute()

  await db.schema
    .createTable('api_keys')
    .addColumn('id', idType, (col) =>
      dialect === 'sqlite' ? col.primaryKey().autoIncrement() : col.primaryKey().generatedAlwaysAsIdentity(),
    )
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('plan', 'text', (col) => col.notNull())
    .addColumn('prefix', 'text', (col) => col.notNull())
    .addColumn('key_hash', 'text', (col) => col.notNull().unique())
    .addColumn('per_minute', 'bigint')
    .addColumn('per_day', 'bigint')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute()
}
