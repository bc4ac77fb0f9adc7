// Table types as Kysely sees them. Times are Unix milliseconds; int8 columns come
// back from PostgreSQL as numbers (see postgres.ts), as from SQLite.
import type { Generated } from 'kysely'

export interface PetsTable {
  id: Generated<number>
  name: string
  category_id: number
  status: string
  created_at: number
}

export interface ApiKeysTable {
  id: Generated<number>
  name: string
  plan: string
  prefix: string
  key_hash: string
  /** Custom limits, enterprise keys only. */
  per_minute: number | null
  per_day: number | null
  created_at: number
  last_used_at: number | null
  revoked_at: number | null
}

export interface IdempotencyKeysTable {
  api_key_id: number
  idempotency_key: string
  /** SHA-256 of the request body, canonicalised: the same key with another body is refused. */
  fingerprint: string
  /** While the first request runs: until when it holds the key. Null once it completed. */
  locked_until: number | null
  response_status: number | null
  response_body: string | null
  created_at: number
  expires_at: number
}

export interface OrdersTable {
  id: Generated<number>
  pet_id: number
  api_key_id: number
  status: string
  placed_at: number
  closed_at: number | null
}

export interface Database {
  pets: PetsTable
  api_keys: ApiKeysTable
  idempotency_keys: IdempotencyKeysTable
  orders: OrdersTable
}
