// What the store throws beyond its typed outcomes. A database that cannot be reached
// (a lost or refused connection, a busy SQLite file, a store being closed) is a
// StoreUnavailableError, so that nothing above db/ knows a SQLSTATE or a driver's
// error: the error handler answers it 503 with Retry-After. Anything else is a bug.

/**
 * Whether a write that failed so may have taken effect: `not_written` when nothing
 * reached the database (no connection, a circuit open, SQLite's lock never taken);
 * `unknown` when the statement (or its COMMIT) was sent and its answer never came: it
 * may have been committed.
 */
export type WriteOutcome = 'not_written' | 'unknown'

/** The database cannot be reached right now; retrying shortly may succeed. `cause` is the driver's error. */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError'
  readonly outcome: WriteOutcome
  constructor(message: string, options: { cause?: unknown; outcome?: WriteOutcome } = {}) {
    super(message, { cause: options.cause })
    this.outcome = options.outcome ?? 'unknown'
  }
}

/**
 * Too much of one kind of work waits for the store on this instance (db/gate.ts): a
 * refusal, not a fault. The error handler answers it 503 with Retry-After, and does not
 * log it as an error (any caller may cause it).
 */
export class StoreBusyError extends Error {
  override name = 'StoreBusyError'
  constructor(readonly what: string) {
    super(`too many ${what} at once`)
  }
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

// Failures that wrote nothing: no connection was had, SQLite never got its lock (a busy
// COMMIT is not committed), the store was closed, or PostgreSQL cancelled or rolled
// back the statement itself (statement or lock timeout, deadlock, serialization).
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'SQLITE_BUSY', 'SQLITE_LOCKED', '57P03', '57014', '55P03', '40P01', '40001'])
const NOT_SENT_MESSAGES = /timeout exceeded when trying to connect|driver has already been destroyed/

/** What a failed write may have done: see WriteOutcome. */
function outcomeOf(error: Error): WriteOutcome {
  const code = (error as { code?: unknown }).code
  return (typeof code === 'string' && NOT_SENT_CODES.has(code)) || NOT_SENT_MESSAGES.test(error.message) ? 'not_written' : 'unknown'
}

/**
 * True for a query sent and never answered within query_timeout, or a connection that
 * timed out at the socket: the database (or the path to it) is silent, not slow (a slow
 * statement is cancelled by the server's statement_timeout first), and the next
 * requests would wait as long. The circuit breaker opens on these (circuit-breaker.ts).
 * A pool with no free connection in time is not one: that is load, and a refusal
 * there already costs no more than the connect timeout.
 */
function isSilence(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return isSilence(error.cause)
  if (!(error instanceof Error)) return false
  return (error as { code?: unknown }).code === 'ETIMEDOUT' || error.message === 'Query read timeout'
}

/** True for a driver error that means the database cannot be reached right now, not a bug. */
export function isUnavailable(error: unknown): error is Error {
  if (!(error instanceof Error)) return false
  const code = (error as { code?: unknown }).code
  // 08P01 is a protocol violation (a statement of more than 65,535 parameters): a bug, not a lost connection.
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || (code.startsWith('08') && code !== '08P01'))) return true
  return UNAVAILABLE_MESSAGES.test(error.message)
}

/** True for a unique constraint refusing a row (SQLite's SQLITE_CONSTRAINT_UNIQUE, PostgreSQL's 23505). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === '23505'
}

function translated(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || !isUnavailable(error)) return error
  return new StoreUnavailableError(`the database is unavailable: ${(error as Error).message}`, { cause: error, outcome: outcomeOf(error as Error) })
}

/** What the guard needs of a circuit breaker (circuit-breaker.ts). */
export interface Breaker {
  /** The refusal while the circuit is open, else undefined. */
  refusal(): StoreUnavailableError | undefined
  trip(error: unknown): void
}

const NO_BREAKER: Breaker = { refusal: () => undefined, trip() {} }

/**
 * The one guard at the store's edge: every method of `part` that returns a promise
 * rejects with a StoreUnavailableError instead of the driver's error when the
 * database cannot be reached; while `breaker` is open, every call is refused at once,
 * and a wait given up on opens it. `onCall` hears of every call made (the store's count
 * of them, for /metrics; a refusal of the open circuit costs none and is not one).
 * Returns a plain object (tests may replace a method).
 */
export function guarded<T extends object>(part: T, { breaker = NO_BREAKER, onCall = () => {} }: { breaker?: Breaker; onCall?: () => void } = {}): T {
  const guard = {} as Record<string, unknown>
  const failed = (error: unknown) => {
    const translation = translated(error)
    if (isSilence(translation)) breaker.trip(translation)
    return translation
  }
  for (const [name, member] of Object.entries(part)) {
    guard[name] =
      typeof member === 'function'
        ? (...args: unknown[]) => {
            // Refused as a rejection, never a throw: a caller that chains .catch() (or an
            // async function whose promise nobody awaits) must not see it thrown past it.
            const refusal = breaker.refusal()
            if (refusal) return Promise.reject(refusal)
            onCall()
            let result: unknown
            try {
              result = (member as (...a: unknown[]) => unknown).apply(part, args)
            } catch (error) {
              throw failed(error)
            }
            return result instanceof Promise ? result.catch((error: unknown) => Promise.reject(failed(error))) : result
          }
        : member
  }
  return guard as T
}
