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

export interface Database {
  pets: PetsTable
  api_keys: ApiKeysTable
}
