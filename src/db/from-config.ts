// Opens the store DATABASE_URL names. A store that cannot be opened at start
// (PostgreSQL unreachable, a wrong password, a SQLite path that cannot be created)
// stops the process with a message naming the variable to fix, never its password.
import { redactUrl, type Config } from '../config.js'
import { openStore } from './open-store.js'
import type { Store, StoreOptions } from './store.js'

export class StoreOpenError extends Error {
  override name = 'StoreOpenError'
}

export async function openStoreFromConfig(config: Pick<Config, 'databaseUrl'>, options: StoreOptions = {}): Promise<Store> {
  try {
    return await openStore(config.databaseUrl, options)
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error)
    throw new StoreOpenError(`DATABASE_URL=${redactUrl(config.databaseUrl)}: cannot open the store: ${reason}`, { cause: error })
  }
}
