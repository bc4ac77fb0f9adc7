// The store: a database with its repositories. The rest of the service sees only this.
import { migrate, openDatabase, ping, type DatabaseHandle, type Dialect } from './database.js'
import { createApiKeyRepository, type ApiKeyRepository } from './api-key-repository.js'
import { createIdempotencyRepository, type IdempotencyRepository } from './idempotency-repository.js'
import type { PetsStore } from './pets-store.js'
import { createOrderRepository, type OrderRepository } from './order-repository.js'
import { createPostgresPetsStore } from './postgres-pets-store.js'
import { createSqlitePetsStore } from './sqlite-pets-store.js'
import { createSqliteGroupCommit, type GroupCommit } from './group-commit.js'
import { createSqliteOrderWrites } from './sqlite-orders.js'
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
  // SQLite: one group commit on the writer, for pet inserts and order writes alike.
  const groupCommit = handle.dialect === 'sqlite' ? createSqliteGroupCommit(handle.db, handle.sqlite.connection) : undefined
  const pets = openPetsStore(handle, groupCommit)
  const transaction = createTransact(handle)
  const sqliteOrders = handle.dialect === 'sqlite' && groupCommit ? createSqliteOrderWrites(handle.sqlite.connection, groupCommit) : undefined
  return {
    dialect: handle.dialect,
    pets,
    orders: createOrderRepository(handle.db, pets, { transaction, sqlite: sqliteOrders }),
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

/** One pets store per database, each fast in its own way. */
function openPetsStore(handle: DatabaseHandle, groupCommit: GroupCommit | undefined): PetsStore {
  if (handle.dialect === 'sqlite') return createSqlitePetsStore({ db: handle.db, writer: handle.sqlite.connection, file: handle.sqlite.file, groupCommit })
  return createPostgresPetsStore(handle.pool)
}
