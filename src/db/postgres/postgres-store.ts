// The store on PostgreSQL: one bounded pool (connection.ts) for Kysely and for the
// hot paths' named statements alike, and one of its own for the webhook delivery queue.
import { migrate, ping, type MigrationOptions } from '../database.js'
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

/**
 * The delivery queue's connections: a dispatcher's claims, records and fan-outs never
 * wait for one of the API's four (nor the API's requests for a dispatcher's), and their
 * statements are planned by their indexes whatever the statistics say. A queue's tables
 * change faster than ANALYZE follows: with none yet (a new installation under a burst of
 * writes), or taken before a burst, the planner guesses a few dozen pending deliveries and
 * would rather read and sort every pending one, or scan every event, for a batch (a
 * claim took 25 ms instead of 4 with 30,000 pending; a fan-out's batch of 500, 40 ms
 * instead of 7 with 40,000, growing with the backlog). Every statement of the queue has
 * an index to go by (test/webhook-queue-plans.test.ts). Their commits do not wait for
 * the WAL's flush: a crash of the database may undo the last moments of claims, records
 * and fan-outs, which are then made again (an attempt sent again: delivery is at least
 * once), and never an event, which the API's own connections write.
 */
const QUEUE_POOL_SIZE = 3
export const DELIVERY_QUEUE_SETTINGS = { enable_seqscan: 'off', enable_bitmapscan: 'off', synchronous_commit: 'off' }

/** Opens the pools on the database at `url` and applies pending migrations. */
export async function openPostgresStore(url: string, options: PostgresPoolOptions = {}, migrations?: MigrationOptions): Promise<BackendStore> {
  // On a connection of their own without the requests' statement timeout: an index
  // built on a million pets takes longer than 5 s, and so does the wait for the
  // migration lock of an instance that started at the same moment.
  const migrating = openPostgres(url, { size: 1, statementTimeoutMs: 0 })
  try {
    await migrate({ dialect: 'postgres', db: migrating.db }, migrations)
  } finally {
    await migrating.db.destroy()
  }
  const { pool, db } = openPostgres(url, options)
  const queue = openPostgres(url, { ...options, size: QUEUE_POOL_SIZE, settings: DELIVERY_QUEUE_SETTINGS })
  return {
    dialect: 'postgres',
    pets: createPostgresPetsStore(pool),
    categories: createCategoriesStore(db, 'postgres'),
    orders: createPostgresOrdersStore(db, pool),
    apiKeys: createApiKeysStore(db, 'postgres'),
    accounts: createAccountsStore(db),
    usage: createUsageStore(db),
    webhookEndpoints: createWebhookEndpointsStore(db, 'postgres'),
    deliveries: createDeliveryQueue(queue.db, 'postgres', listenForDeliveries(url), async (name, query) => (await queue.pool.query({ name, text: query.sql, values: [...query.parameters] })).rows),
    idempotency: createIdempotencyClaims(db),
    ping: () => ping(db),
    close: async () => {
      await Promise.all([db.destroy(), queue.db.destroy()])
    },
  }
}
