// What the store throws beyond its typed outcomes. A database that cannot be reached
// (a lost or refused connection, a busy SQLite file, a store being closed) is a
// StoreUnavailableError, so that nothing above db/ knows a SQLSTATE or a driver's
// error: the error handler answers it 503 with Retry-After. Anything else is a bug.

/** The database cannot be reached right now; retrying shortly may succeed. `cause` is the driver's error. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError'
}

// PostgreSQL SQLSTATEs for a lost or refused connection (class 08, admin shutdown,
// crash shutdown, cannot connect now), Node's socket errors, SQLite's busy/locked,
// and Kysely's answer once the store is closed (an instance shutting down). Also
// PostgreSQL's own "busy": a statement that outlived statement_timeout (57014), a lock
// not granted within lock_timeout (55P03), a deadlock (40P01) or a serialization
// failure (40001). Each is SQLITE_BUSY's kin, a contention that a retry shortly may
// not meet, and is answered the same: 503 with Retry-After, not 500.
const UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '57014', '55P03', '40P01', '40001', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'SQLITE_BUSY', 'SQLITE_LOCKED'])
const UNAVAILABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout|Connection closed|driver has already been destroyed/

/** True for a driver error that means the database cannot be reached right now, not a bug. */
export function isUnavailable(error: unknown): error is Error {
  if (!(error instanceof Error)) return false
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true
  return UNAVAILABLE_MESSAGES.test(error.message)
}

/** True for a unique constraint refusing a row (SQLite's SQLITE_CONSTRAINT_UNIQUE, PostgreSQL's 23505). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505'
}

function translated(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || !isUnavailable(error)) return error
  return new StoreUnavailableError(`the database is unavailable: ${(error as Error).message}`, { cause: error })
}

/**
 * The one guard at the store's edge: every method of `part` that returns a promise
 * rejects with a StoreUnavailableError instead of the driver's error when the
 * database cannot be reached. `onCall` hears of every call (the store's count of
 * them, for /metrics). Returns a plain object (tests may replace a method).
 */
export function guarded<T extends object>(part: T, onCall: () => void = () => {}): T {
  const guard = {} as Record<string, unknown>
  for (const [name, member] of Object.entries(part)) {
    guard[name] =
      typeof member === 'function'
        ? (...args: unknown[]) => {
            onCall()
            let result: unknown
            try {
              result = (member as (...a: unknown[]) => unknown).apply(part, args)
            } catch (error) {
              throw translated(error)
            }
            return result instanceof Promise ? result.catch((error: unknown) => Promise.reject(translated(error))) : result
          }
        : member
  }
  return guard as T
}
