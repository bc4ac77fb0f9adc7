// Opens the store a URL names: `sqlite:<path>` or a PostgreSQL URL. A third backend
// is a folder beside sqlite/ and postgres/, a line here, and a line in the contract
// test's list of dialects (test/store-contract.test.ts).
import { createCircuitBreaker } from './circuit-breaker.js'
import { guarded } from './store-errors.js'
import { openPostgresStore } from './postgres/postgres-store.js'
import { openSqliteStore } from './sqlite/sqlite-store.js'
import type { Store, StoreOptions } from './store.js'
import { USAGE_KEPT_DAYS, USAGE_KEPT_MS } from '../vocabulary/usage.js'

/** Expired Idempotency-Key records outlive their 24 hours, and usage its 90 days, only until the next purge. */
const PURGE_EVERY_MS = 10 * 60 * 1000
const EVENTS_KEPT_MS = 30 * 86_400_000

/** Opens the database at `url`, applies pending migrations, and purges expired Idempotency-Key records and old usage every ten minutes until closed. */
export async function openStore(url: string, { onConnectionError, onBackgroundError = () => {}, onCircuitChange, idleTimeoutMs, migrations }: StoreOptions = {}): Promise<Store> {
  const store = url.startsWith('sqlite:')
    ? await openSqliteStore(url.slice('sqlite:'.length), migrations)
    : await openPostgresStore(url, { onIdleError: onConnectionError, idleTimeoutMs }, migrations)

  const breaker = createCircuitBreaker({ probe: store.ping, onChange: onCircuitChange })
  let calls = 0
  let backgroundCalls = 0
  const counted = {
    breaker,
    onCall: () => {
      calls++
    },
  }
  const inBackground = {
    breaker,
    onCall: () => {
      calls++
      backgroundCalls++
    },
  }
  const idempotency = guarded(store.idempotency, counted)
  const usage = guarded(store.usage, counted)
  const background = { apiKeys: guarded(store.apiKeys, inBackground), usage: guarded(store.usage, inBackground) }
  const purges = { deliveries: guarded(store.deliveries, inBackground), idempotency: guarded(store.idempotency, inBackground) }
  // The backlog /metrics reads at each scrape is not one of the calls it counts: a scrape
  // would otherwise show up in the very figure that says what requests cost.
  const deliveries = { ...guarded(store.deliveries, counted), backlog: guarded({ backlog: store.deliveries.backlog }, { breaker }).backlog }
  const purge = setInterval(() => {
    purges.deliveries.purge(Date.now() - EVENTS_KEPT_MS).catch((error: unknown) => onBackgroundError(error, 'could not purge events older than 30 days'))
    purges.idempotency.purgeExpired(Date.now()).catch((error: unknown) => onBackgroundError(error, 'could not purge expired Idempotency-Keys'))
    background.usage.purge(Date.now() - USAGE_KEPT_MS).catch((error: unknown) => onBackgroundError(error, `could not purge usage older than ${USAGE_KEPT_DAYS} days`))
  }, PURGE_EVERY_MS).unref()

  return {
    dialect: store.dialect,
    // The edge where a driver's "cannot reach the database" becomes a StoreUnavailableError.
    pets: guarded(store.pets, counted),
    categories: guarded(store.categories, counted),
    orders: guarded(store.orders, counted),
    apiKeys: guarded(store.apiKeys, counted),
    accounts: guarded(store.accounts, counted),
    usage,
    webhookEndpoints: guarded(store.webhookEndpoints, counted),
    deliveries,
    idempotency,
    // Health checks and the breaker's probes are not the store calls /metrics counts.
    ping: guarded({ ping: store.ping }, { breaker }).ping,
    get circuitOpen() {
      return breaker.open
    },
    calls: () => calls,
    background,
    backgroundCalls: () => backgroundCalls,
    close: () => {
      clearInterval(purge)
      breaker.close()
      return store.close()
    },
  }
}
