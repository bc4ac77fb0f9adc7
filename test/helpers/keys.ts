// API keys made straight in the store, as `petstore keys create` makes them (each in
// an account of its own, unless given one): for the in-process test server
// (server.createKey) and for stores that a server in another process uses (createKeyIn).
import { newKeyRow } from '../../src/api-keys/issue-key.js'
import type { KeyEnvironment } from '../../src/api-keys/key-format.js'
import { checkPlan, type Limits } from '../../src/vocabulary/plans.js'
import type { Scope } from '../../src/vocabulary/scopes.js'
import { systemClock, type Clock } from '../../src/clock.js'
import type { ApiKeysStore } from '../../src/db/api-keys-store.js'
import { openStore } from '../../src/db/open-store.js'
import type { Store } from '../../src/db/store.js'

/** Enterprise limits no test reaches, for tests of anything but rate limiting. */
export const UNLIMITED: Limits = { perMinute: 1_000_000, perDay: 10_000_000 }

export interface TestKeyOptions {
  /** A plan name, checked as the command line checks it; free by default. */
  plan?: string
  /** An enterprise key's own limits. */
  custom?: Partial<Limits>
  environment?: KeyEnvironment
  name?: string
  clock?: Clock
  scopes?: readonly Scope[]
  /** Unix ms. */
  expiresAt?: number
  /** An existing account to add the key to (plan and custom are then the account's). */
  accountId?: number
}

export interface TestKey {
  secret: string
  /** The store's id of the key. */
  id: number
  accountId: number
}

export async function issueTestKey(apiKeys: Pick<ApiKeysStore, 'insert'>, options: TestKeyOptions = {}): Promise<TestKey> {
  const name = options.name ?? 'test'
  const { secret, row } = newKeyRow({
    name,
    account: options.accountId ?? { name, ...checkPlan(options.plan ?? 'free', options.custom ?? {}) },
    environment: options.environment ?? 'test',
    ...(options.scopes === undefined ? {} : { scopes: options.scopes }),
    ...(options.expiresAt === undefined ? {} : { expiresAt: options.expiresAt }),
  })
  const stored = await apiKeys.insert(row, (options.clock ?? systemClock).now())
  return { secret, id: stored.id, accountId: stored.account.id }
}

/** Opens the store at `databaseUrl` (migrating it), runs `work` on it, and closes it. */
export async function withStore<T>(databaseUrl: string, work: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(databaseUrl)
  try {
    return await work(store)
  } finally {
    await store.close()
  }
}

/** A key in the store at `databaseUrl`, for a server running in another process. */
export const createKeyIn = (databaseUrl: string, options: TestKeyOptions = {}): Promise<TestKey> =>
  withStore(databaseUrl, (store) => issueTestKey(store.apiKeys, options))
