import type { Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// Idempotency-Key records of POST /v1/pets (IETF draft httpapi-idempotency-key-header):
// one row per (API key, Idempotency-Key). While a request runs, `locked_until` is set
// and the response columns are null; its completion stores the response in the same
// transaction as the pet, so a record with a response always has its pet.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('api_key_id', 'bigint', (col) => col.notNull())
    .addColumn('idempotency_key', 'text', (col) => col.notNull())
    .addColumn('fingerprint', 'text', (col) => col.notNull())
    .addColumn('locked_until', 'bigint')
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['api_key_id', 'idempotency_key'])
    .execute()
  // The purge deletes by expiry.
  await db.schema.createIndex('idempotency_keys_expires_at').on('idempotency_keys').column('expires_at').execute()
}
