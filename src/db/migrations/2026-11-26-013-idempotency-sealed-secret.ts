import type { Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// A create whose 201 carries a secret (POST /v1/keys: the new key; POST
// /v1/webhook-endpoints: the signing secret) keeps that secret with its
// Idempotency-Key record, sealed with the main key (src/secrets/secret-box.ts), so that
// a retry gets the same 201, secret included. The response body is stored without it;
// `npm run reseal-secrets` seals it again after a main key rotation, and the record
// goes with its expiry (24 hours) like any other.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable('idempotency_keys').addColumn('sealed_secret', 'text').execute()
}
