// Opens the store DATABASE_URL names. A store that cannot be opened at start
// (PostgreSQL unreachable, a wrong password, a SQLite path that cannot be created)
// stops the process with a message naming the variable to fix, never its password;
// and so does one that does not answer within OPEN_TIMEOUT_MS, rather than a start
// that hangs saying nothing. Migrations, once it has answered, are not bounded.
import { redactUrl, type Config } from '../config.js'
import { openStore } from './open-store.js'
import type { Store, StoreOptions } from './store.js'

export class StoreOpenError extends Error {
  override name = 'StoreOpenError'
}

export const OPEN_TIMEOUT_MS = 10_000

export async function openStoreFromConfig(config: Pick<Config, 'databaseUrl'>, options: StoreOptions & { timeoutMs?: number } = {}): Promise<Store> {
  const shown = redactUrl(config.databaseUrl)
  const timeoutMs = options.timeoutMs ?? OPEN_TIMEOUT_MS
  let timer: NodeJS.Timeout | undefined
  // The deadline is for the database to answer; migrations, once it has, take what they take.
  const migrations = {
    ...options.migrations,
    onPending: (names: readonly string[]) => {
      clearTimeout(timer)
      options.migrations?.onPending?.(names)
    },
  }
  const opening = openStore(config.databaseUrl, { ...options, migrations })
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs)
  })
  try {
    return await Promise.race([opening, timedOut])
  } catch (error) {
    // The store may still open after the deadline: closed then, so that nothing holds the process.
    opening.then((store) => store.close(), () => {})
    const reason = (error instanceof Error ? error.message.split('\n')[0]! : String(error)).replaceAll(config.databaseUrl, shown)
    throw new StoreOpenError(`DATABASE_URL=${shown}: cannot open the store: ${reason}`, { cause: error })
  } finally {
    clearTimeout(timer)
  }
}
