// The store: the contracts the rest of the service sees, and nothing of SQL. Each
// backend (sqlite/, postgres/) implements them; open-store.ts picks one by URL.
import type { MigrationOptions } from './database.js'
import type { AccountsStore, ApiKeysStore } from './api-keys-store.js'
import type { CategoriesStore } from './categories-store.js'
import type { Dialect } from './dialect.js'
import type { IdempotencyStore } from './idempotency-store.js'
import type { OrdersStore } from './orders-store.js'
import type { PetsStore } from './pets-store.js'
import type { UsageStore } from './usage-store.js'
import type { DeliveryQueue } from './delivery-queue.js'
import type { WebhookEndpointsStore } from './webhook-endpoints-store.js'

export interface Store {
  dialect: Dialect
  pets: PetsStore
  /** What a pet's categoryId names. */
  categories: CategoriesStore
  orders: OrdersStore
  apiKeys: ApiKeysStore
  accounts: AccountsStore
  /** Requests per key, hour and outcome. */
  usage: UsageStore
  /** Webhook endpoints, and the events (written by triggers with the changes they report) an account reads: the webhook service's. */
  webhookEndpoints: WebhookEndpointsStore
  /** The deliveries of events to endpoints: the dispatchers'. */
  deliveries: DeliveryQueue
  /** Idempotency-Key records; requests use them through src/idempotency/. */
  idempotency: IdempotencyStore
  /**
   * Calls made to the store's parts so far, each one or more statements (or a share
   * of a batch): what /metrics shows, so that a request that should cost none can be
   * seen to cost none.
   */
  calls(): number
  /**
   * The key and usage stores again, for the calls no request waits for: a cached key's
   * refresh and its last use, the usage history's write every 5 s. Counted in calls() and
   * in backgroundCalls() too, so that what requests cost can be told from what time costs.
   */
  background: Pick<Store, 'apiKeys' | 'usage'>
  /** Of calls(), those made through `background`, and the store's own purges (every ten minutes). */
  backgroundCalls(): number
  /** Resolves when the database answers a trivial query; refused at once while the circuit is open. */
  ping(): Promise<void>
  /** True while the database went silent and calls are refused at once (circuit-breaker.ts); backends leave it undefined. */
  readonly circuitOpen?: boolean
  close(): Promise<void>
}

export interface StoreOptions {
  /** A pooled connection died while idle (e.g. the server restarted); the pool replaces it. */
  onConnectionError?: (error: Error) => void
  /** The circuit breaker opened (the database went silent: calls are refused at once) or closed again. */
  onCircuitChange?: (open: boolean, error?: unknown) => void
  /** A background task of the store failed (the purge of expired Idempotency-Key records); it tries again later. */
  onBackgroundError?: (error: unknown, what: string) => void
  /**
   * PostgreSQL: pg-pool's idle timeout, 10 s by default. Only connections beyond the
   * pool's minimum are ever closed for it, and the minimum is the pool's size, so in
   * practice none is; tests set a short one to prove it without waiting 10 s.
   */
  idleTimeoutMs?: number
  /** Which pending migrations to apply (database.ts, MigrationOptions). */
  migrations?: MigrationOptions
}

/** What a backend (sqlite/, postgres/) opens: open-store.ts guards and counts its calls. */
export type BackendStore = Omit<Store, 'calls' | 'background' | 'backgroundCalls'>
