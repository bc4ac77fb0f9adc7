// Every migration, in order. Names are date-prefixed; a released migration is
// never edited, a change is a new file.
import type { Migration, MigrationProvider } from 'kysely'
import type { Dialect } from '../dialect.js'
import * as petsAndApiKeys from './2026-11-22-001-pets-and-api-keys.js'
import * as idempotencyKeys from './2026-11-22-002-idempotency-keys.js'
import * as orders from './2026-11-23-003-orders.js'
import * as petStatusCounts from './2026-11-24-004-pet-status-counts.js'
import * as ordersOutlivePets from './2026-11-24-005-orders-outlive-pets.js'
import * as apiKeyLifecycle from './2026-11-24-006-api-key-lifecycle.js'
import * as eventsAndWebhooks from './2026-11-24-007-events-and-webhooks.js'
import * as notifyOnceAtATime from './2026-11-25-008-notify-once-at-a-time.js'
import * as accounts from './2026-11-25-009-accounts.js'
import * as webhookQueue from './2026-11-25-012-webhook-queue.js'

const MIGRATIONS = {
  '2026-11-22-001-pets-and-api-keys': petsAndApiKeys,
  '2026-11-22-002-idempotency-keys': idempotencyKeys,
  '2026-11-23-003-orders': orders,
  '2026-11-24-004-pet-status-counts': petStatusCounts,
  '2026-11-24-005-orders-outlive-pets': ordersOutlivePets,
  '2026-11-24-006-api-key-lifecycle': apiKeyLifecycle,
  '2026-11-24-007-events-and-webhooks': eventsAndWebhooks,
  '2026-11-25-008-notify-once-at-a-time': notifyOnceAtATime,
  '2026-11-25-009-accounts': accounts,
  '2026-11-25-012-webhook-queue': webhookQueue,
}

export function migrationProvider(dialect: Dialect): MigrationProvider {
  return {
    async getMigrations() {
      const migrations: Record<string, Migration> = {}
      for (const [name, migration] of Object.entries(MIGRATIONS)) {
        migrations[name] = { up: (db) => migration.up(db, dialect) }
      }
      return migrations
    },
  }
}
