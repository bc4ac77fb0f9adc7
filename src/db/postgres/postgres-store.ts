// The store on PostgreSQL: one bounded pool (connection.ts) for Kysely and for the
// hot paths' named statements alike.
import { migrate, ping } from '../database.js'
import { createAccountsStore, createApiKeysStore } from '../sql/api-keys.js'
import { createCategoriesStore } from '../sql/categories.js'
import { createUsageStore } from '../sql/usage.js'
import { createDeliveryQueue } from '../sql/delivery-queue.js'
import { createWebhookEndpointsStore } from '../sql/webhook-endpoints.js'
import { createIdempotencyClaims } from '../sql/idempotency-claims.js'
import type { BackendStore } from '../store.js'
import { openPostgres, type PostgresPoolOptions } from './connection.js'
import { createPostgresOrdersStore } from './orders-store.js'
import { createPostgresPetsStore } from './pets-store.js'
import { listenForDeliveries } from './notifications.js'

/** Opens a pool on the database at `url` and applies pending migrations. */
export async function openPostgresStore(url: string, options: PostgresPoolOptions = {}): Promise<BackendStore> {
  const { pool, db } = openPostgres(url, options)
  try {
    await migrate({ dialect: 'postgres', db })
  } catch (error) {
    await db.destroy()
    throw error
  }
  return {
    dialect: 'postgres',
    pets: createPostgresPetsStore(pool),
    categories: createCategoriesStore(db),
    orders: createPostgresOrdersStore(db, pool),
    apiKeys: createApiKeysStore(db),
    accounts: createAccountsStore(db),
    usage: createUsageStore(db),
    webhookEndpoints: createWebhookEndpointsStore(db, 'postgres'),
    deliveries: createDeliveryQueue(db, 'postgres', listenForDeliveries(url), async (name, query) => (await pool.query({ name, text: query.sql, values: [...query.parameters] })).rows),
    idempotency: createIdempotencyClaims(db),
    ping: () => ping(db),
    close: () => db.destroy(),
  }
}
