// The store: the contracts the rest of the service sees, and nothing of SQL. Each
// backend (sqlite/, postgres/) implements them; open-store.ts picks one by URL.
import type { AccountsStore, ApiKeysStore } from './api-keys-store.js'
import type { Dialect } from './dialect.js'
import type { IdempotencyStore } from './idempotency-store.js'
import type { OrdersStore } from './orders-store.js'
import type { PetsStore } from './pets-store.js'
import type { UsageStore } from './usage-store.js'
import type { WebhooksStore } from './webhooks-store.js'

export interface Store {
  dialect: Dialect
  pets: PetsStore
  orders: OrdersStore
  apiKeys: ApiKeysStore
  accounts: AccountsStore
  /** Requests per key, hour and outcome. */
  usage: UsageStore
  /** Events (written by triggers with the changes they report), webhook endpoints and deliveries. */
  webhooks: WebhooksStore
  /** Idempotency-Key records; requests use them through src/idempotency/. */
  idempotency: IdempotencyStore
  /**
   * Calls made to the store's parts so far, each one or more statements (or a share
   * of a batch): what /metrics shows, so that a request that should cost none can be
   * seen to cost none.
   */
  calls(): number
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>
  close(): Promise<void>
}

export interface StoreOptions {
  /** A pooled connection died while idle (e.g. the server restarted); the pool replaces it. */
  onConnectionError?: (error: Error) => void
  /** A background task of the store failed (the purge of expired Idempotency-Key records); it tries again later. */
  onBackgroundError?: (error: unknown, what: string) => void
  /**
   * PostgreSQL: pg-pool's idle timeout, 10 s by default. Only connections beyond the
   * pool's minimum are ever closed for it, and the minimum is the pool's size, so in
   * practice none is; tests set a short one to prove it without waiting 10 s.
   */
  idleTimeoutMs?: number
}

/** What a backend (sqlite/, postgres/) opens: open-store.ts guards and counts its calls. */
export type BackendStore = Omit<Store, 'calls'>
