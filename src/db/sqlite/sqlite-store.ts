// The store on SQLite: one file, the writer connection Kysely runs on, and a
// read-only connection of the pets store's own. Every write (pets, orders, and the
// Idempotency-Key responses that go with them) goes through one group commit, so
// one event-loop turn is one commit.
import { createSqliteGroupCommit } from '../batching/group-commit.js'
import { migrate, ping, type MigrationOptions } from '../database.js'
import { createAccountsStore, createApiKeysStore } from '../sql/api-keys.js'
import { createCategoriesStore } from '../sql/categories.js'
import { createUsageStore } from '../sql/usage.js'
import { createDeliveryQueue } from '../sql/delivery-queue.js'
import { createWebhookEndpointsStore } from '../sql/webhook-endpoints.js'
import { createIdempotencyClaims } from '../sql/idempotency-claims.js'
import type { BackendStore } from '../store.js'
import { openSqlite } from './connection.js'
import { createSqliteCompleteClaim } from './idempotency.js'
import { createSqliteOrdersStore } from './orders-store.js'
import { createSqlitePetsStore } from './pets-store.js'

/** Opens the SQLite file at `path` and applies pending migrations. */
export async function openSqliteStore(path: string, migrations?: MigrationOptions): Promise<BackendStore> {
  const { file, writer, db } = openSqlite(path)
  try {
    await migrate({ dialect: 'sqlite', db }, migrations)
  } catch (error) {
    await db.destroy()
    throw error
  }
  const groupCommit = createSqliteGroupCommit(db, writer)
  const completeClaim = createSqliteCompleteClaim(writer)
  const pets = createSqlitePetsStore({ writer, file, groupCommit, completeClaim })
  return {
    dialect: 'sqlite',
    pets,
    categories: createCategoriesStore(db, 'sqlite'),
    orders: createSqliteOrdersStore({ db, writer, groupCommit, completeClaim }),
    apiKeys: createApiKeysStore(db, 'sqlite'),
    accounts: createAccountsStore(db),
    usage: createUsageStore(db),
    webhookEndpoints: createWebhookEndpointsStore(db, 'sqlite'),
    deliveries: createDeliveryQueue(db, 'sqlite'),
    idempotency: createIdempotencyClaims(db),
    ping: () => ping(db),
    close: async () => {
      pets.close()
      await db.destroy()
    },
  }
}
