// Table types as Kysely sees them. Times are Unix milliseconds; int8 columns come
// back from PostgreSQL as numbers (database.ts sets the parser), as from SQLite.
import type { Generated } from 'kysely'

export interface PetsTable {
  id: Generated<number>
  name: string
  category_id: number
  status: string
  created_at: number
}

/** What kind of animal a pet is; every pet names one (migration 2026-11-25-010). */
export interface CategoriesTable {
  id: Generated<number>
  name: string
  /** The name as its uniqueness sees it (vocabulary/category-names.ts foldName). */
  name_key: string
  description: Generated<string>
  created_at: number
}

/** Who owns keys and what they make; holds the plan and its limits (decision D11). */
export interface AccountsTable {
  id: Generated<number>
  name: string
  plan: string
  /** Custom limits, enterprise accounts only. */
  per_minute: number | null
  per_day: number | null
  created_at: number
  disabled_at: number | null
}

export interface ApiKeysTable {
  id: Generated<number>
  account_id: number
  name: string
  prefix: string
  key_hash: string
  created_at: number
  last_used_at: number | null
  revoked_at: number | null
  /** Space-separated scopes. */
  scopes: Generated<string>
  expires_at: number | null
  disabled_at: number | null
  /** 1: the operator disabled it (the command line), and alone enables it again (migration 2026-11-28-020). */
  disabled_by_operator: Generated<number>
  replaced_by: number | null
  /** The key that made this one over the API; null: the operator. */
  created_by: number | null
}

export interface ApiKeyUsageTable {
  api_key_id: number
  /** Unix ms of the start of the UTC hour. */
  hour: number
  outcome: string
  requests: number
}

/** An account's requests per hour and outcome: the sum of its keys' rows, kept apart so that its history reads no key's. */
export interface AccountUsageTable {
  account_id: number
  /** Unix ms of the start of the UTC hour. */
  hour: number
  outcome: string
  requests: number
}

export interface IdempotencyKeysTable {
  account_id: number
  idempotency_key: string
  /** SHA-256 of the request body, canonicalised: the same key with another body is refused. */
  fingerprint: string
  /** While the first request runs: until when it holds the key. Null once it completed. */
  locked_until: number | null
  response_status: number | null
  /** The 201 body, JSON, without the secret it may carry: that is in `sealed_secret`. */
  response_body: string | null
  /** The secret the 201 carried (a new key's, a new endpoint's), sealed with the main key (src/secrets/secret-box.ts); null for most creates. */
  sealed_secret: string | null
  created_at: number
  expires_at: number
}

export interface OrdersTable {
  id: Generated<number>
  pet_id: number
  account_id: number
  status: string
  placed_at: number
  closed_at: number | null
}

export interface EventsTable {
  id: Generated<number>
  type: string
  /** The account an order event concerns; null for pet events, which every account may see. */
  account_id: number | null
  data: string
  created_at: number
  /** 1 until a dispatcher has made its deliveries (set by the triggers when an endpoint takes it). */
  fan_out_pending: Generated<number>
}

export interface WebhookEndpointsTable {
  id: Generated<number>
  account_id: number
  url: string
  description: string
  enabled_events: string
  secret: string
  previous_secret: string | null
  previous_secret_until: number | null
  disabled_at: number | null
  failing_since: number | null
  created_at: number
}

/** Each event type an enabled endpoint takes (`*` for all), kept by triggers on webhook_endpoints (migration 2026-11-28-019): what the public events' triggers ask to mark an event for fan-out. */
export interface WebhookSubscriptionsTable {
  type: string
  endpoint_id: number
}

export interface WebhookDeliveriesTable {
  id: Generated<number>
  endpoint_id: number
  event_id: number
  status: string
  attempts: number
  next_attempt_at: number
  lease_until: number | null
  trigger: Generated<string>
  created_at: number
}

export interface WebhookAttemptsTable {
  id: Generated<number>
  delivery_id: number
  endpoint_id: number
  event_id: number
  trigger: string
  at: number
  duration_ms: number
  response_status: number | null
  error: string | null
}

export interface Database {
  pets: PetsTable
  categories: CategoriesTable
  accounts: AccountsTable
  api_keys: ApiKeysTable
  api_key_usage: ApiKeyUsageTable
  account_usage: AccountUsageTable
  idempotency_keys: IdempotencyKeysTable
  orders: OrdersTable
  events: EventsTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_subscriptions: WebhookSubscriptionsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_attempts: WebhookAttemptsTable
}
