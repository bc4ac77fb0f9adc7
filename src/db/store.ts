// The store: a database with its repositories. The rest of the service sees only this.
import { migrate, openDatabase, ping, type DatabaseHandle, type Dialect } from './database.js'
import { createApiKeyRepository, type ApiKeyRepository } from './api-key-repository.js'
import { createIdempotencyRepository, type IdempotencyRepository } from './idempotency-repository.js'
import type { PetsStore } from './pets-store.js'
import { createOrderRepository, type OrderRepository } from './order-repository.js'
import { createPostgresPetsStore } from './postgres-pets-store.js'
import { createSqlitePetsStore } from './sqlite-pets-store.js'
import { createSqliteGroupCommit } from './group-commit.js'
import type { OrderWrites } from './order-writes.js'
import { createSqliteOrderWrites } from './sqlite-orders.js'
import { createPostgresOrderWrites } from './postgres-orders.js'
import { createTransact, type Transact } from './transaction.js'

export interface Store {
  dialect: Dialect
  pets: PetsStore
  orders: OrderRepository
  apiKeys: ApiKeyRepository
  /** Idempotency-Key records; requests use them through routes/v1/idempotency.ts. */
  idempotency: IdempotencyRepository
  /** Runs work in one transaction, on either database. */
  transaction: Transact
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>
  close(): Promise<void>
}

export interface StoreOptions {
  /** A pooled connection died while idle (e.g. the server restarted); the pool replaces it. */
  onConnectionError?: (error: Error) => void
}

/** Opens the database at `url` and applies pending migrations. */
export async function openStore(url: string, { onConnectionError }: StoreOptions = {}): Promise<Store> {
  const handle = openDatabase(url, onConnectionError)
  try {
    await migrate(handle)
  } catch (error) {
    await handle.db.destroy()
    throw error
  }
  const { pets, orderWrites } = openHotPaths(handle)
  const transaction = createTransact(handle)
  return {
    dialect: handle.dialect,
    pets,
    orders: createOrderRepository(handle.db, pets, { writes: orderWrites }),
    apiKeys: createApiKeyRepository(handle.db),
    idempotency: createIdempotencyRepository(handle.db, transaction),
    transaction,
    ping: () => ping(handle.db),
    close: async () => {
      pets.close()
      await handle.db.destroy()
    },
  }
}

/** Each database's own fast way with pets and orders. */
function openHotPaths(handle: DatabaseHandle): { pets: PetsStore; orderWrites: OrderWrites } {
  if (handle.dialect === 'postgres') return { pets: createPostgresPetsStore(handle.pool), orderWrites: createPostgresOrderWrites(handle.pool) }
  // SQLite: one group commit on the writer, for pet inserts and order writes alike.
  const { db, sqlite } = handle
  const groupCommit = createSqliteGroupCommit(db, sqlite.connection)
  return {
    pets: createSqlitePetsStore({ db, writer: sqlite.connection, file: sqlite.file, groupCommit }),
    orderWrites: createSqliteOrderWrites(sqlite.connection, groupCommit),
  }
}
