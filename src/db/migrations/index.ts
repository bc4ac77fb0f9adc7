// Every migration, in order. Names are date-prefixed; a released migration is
// never edited, a change is a new file.
import { sql, type Kysely, type Migration, type MigrationProvider } from 'kysely'
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
import * as categories from './2026-11-25-010-categories.js'
import * as webhookQueue from './2026-11-25-012-webhook-queue.js'
import * as idempotencySealedSecret from './2026-11-26-013-idempotency-sealed-secret.js'
import * as petsNameStatistics from './2026-11-28-014-pets-name-statistics.js'
import * as queueAutovacuum from './2026-11-28-015-queue-autovacuum.js'
import * as eventsByType from './2026-11-28-016-events-by-type.js'
import * as keysReplacedBy from './2026-11-28-017-keys-replaced-by.js'
import * as orderEventsOwnEndpoints from './2026-11-28-018-order-events-own-endpoints.js'
import * as webhookSubscriptions from './2026-11-28-019-webhook-subscriptions.js'
import * as keysDisabledByOperator from './2026-11-28-020-keys-disabled-by-operator.js'
import * as categoryNamesAsRead from './2026-11-28-021-category-names-as-read.js'
import * as deliveriesDueByEndpoint from './2026-11-28-022-deliveries-due-by-endpoint.js'
import * as accountUsage from './2026-11-29-023-account-usage.js'

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
  '2026-11-25-010-categories': categories,
  '2026-11-25-012-webhook-queue': webhookQueue,
  '2026-11-26-013-idempotency-sealed-secret': idempotencySealedSecret,
  '2026-11-28-014-pets-name-statistics': petsNameStatistics,
  '2026-11-28-015-queue-autovacuum': queueAutovacuum,
  '2026-11-28-016-events-by-type': eventsByType,
  '2026-11-28-017-keys-replaced-by': keysReplacedBy,
  '2026-11-28-018-order-events-own-endpoints': orderEventsOwnEndpoints,
  '2026-11-28-019-webhook-subscriptions': webhookSubscriptions,
  '2026-11-28-020-keys-disabled-by-operator': keysDisabledByOperator,
  '2026-11-28-021-category-names-as-read': categoryNamesAsRead,
  '2026-11-28-022-deliveries-due-by-endpoint': deliveriesDueByEndpoint,
  '2026-11-29-023-account-usage': accountUsage,
}

// PostgreSQL runs every migration in a transaction (Kysely's adapter reports
// transactional DDL). Kysely's SQLite adapter does not, so a SQLite migration ran
// statement by statement: a crash or a failure halfway left half a schema. These
// released migrations open their own transaction on SQLite (begin immediate); every
// other one, and every new one, runs in one this provider opens, taking the write lock
// first: a new migration never opens one itself.
const OWN_SQLITE_TRANSACTION: ReadonlySet<string> = new Set([
  '2026-11-24-004-pet-status-counts',
  '2026-11-24-005-orders-outlive-pets',
  '2026-11-24-006-api-key-lifecycle',
  '2026-11-24-007-events-and-webhooks',
  '2026-11-25-009-accounts',
])

export function migrationProvider(dialect: Dialect): MigrationProvider {
  return {
    async getMigrations() {
      const migrations: Record<string, Migration> = {}
      for (const [name, migration] of Object.entries(MIGRATIONS)) {
        migrations[name] = {
          up: dialect === 'sqlite' && !OWN_SQLITE_TRANSACTION.has(name) ? (db) => inSqliteTransaction(db, (trx) => migration.up(trx, dialect)) : (db) => migration.up(db, dialect),
        }
      }
      return migrations
    },
  }
}

/** Runs `work` in a write transaction on the migrator's one SQLite connection: all of it, or nothing. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
async function inSqliteTransaction(db: Kysely<any>, work: (db: Kysely<any>) => Promise<void>): Promise<void> {
  await sql`begin immediate`.execute(db)
  try {
    await work(db)
    await sql`commit`.execute(db)
  } catch (error) {
    await sql`rollback`.execute(db).catch(() => {})
    throw error
  }
}
