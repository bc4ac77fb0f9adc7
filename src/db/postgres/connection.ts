// The PostgreSQL pool, bounded so that no request hangs on a dead or stuck database,
// and Kysely over it.
import pg from 'pg'
import { Kysely, PostgresDialect } from 'kysely'
import type { Database } from '../schema.js'

export interface PostgresConnection {
  pool: pg.Pool
  db: Kysely<Database>
}

export interface PostgresPoolOptions {
  /** A pooled connection died while idle (e.g. the server restarted); the pool replaces it. Unhandled, it would end the process. */
  onIdleError?: (error: Error) => void
  /** pg-pool's idleTimeoutMillis; pg-pool's own default (10 s) when not given. */
  idleTimeoutMs?: number
  /** Connections at most (POOL_SIZE). */
  size?: number
  /** Settings of every connection's session (`-c name=value` at its start). */
  settings?: Readonly<Record<string, string>>
  /** How long a statement may run (5 s by default, so that no request hangs); 0 for no limit (migrations). */
  statementTimeoutMs?: number
}

// int8 (bigint) is returned as a string by default; our ids and times are safe integers.
const INT8_OID = 20
const int8AsNumber = (value: string) => Number(value)

// No request may hang on a dead or stuck database: bounded waits for a connection
// and for each statement. Four connections: reads are shared per turn and creates go
// one multi-row INSERT at a time, so more connections only meant more PostgreSQL
// backends fighting for the same cores (bench/results.md, fifth pass: POST 1.01–1.06
// of pgbench with 4, 0.80–0.82 with 10, in three pairs of runs).
const POOL_SIZE = 4
const CONNECT_TIMEOUT_MS = 2_000
const STATEMENT_TIMEOUT_MS = 5_000

export function openPostgres(url: string, { onIdleError = () => {}, idleTimeoutMs, size = POOL_SIZE, settings = {}, statementTimeoutMs = STATEMENT_TIMEOUT_MS }: PostgresPoolOptions = {}): PostgresConnection {
  const options = Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)
  const pool = new pg.Pool({
    connectionString: url,
    max: size,
    // Once open, a connection stays open: pg-pool closes a connection idle for
    // idleTimeoutMillis only while the pool holds more than `min`, and the first
    // requests after every quiet spell paid for new connections and cold backends
    // (bench/results.md, seventh pass). TCP keepalive keeps it known to be alive.
    min: size,
    ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMillis: idleTimeoutMs }),
    keepAlive: true,
    keepAliveInitialDelayMillis: 60_000,
    ...(options.length > 0 ? { options: options.join(' ') } : {}),
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    ...(statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs, query_timeout: statementTimeoutMs + 1_000 } : {}),
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID ? int8AsNumber : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  })
  // A server restart kills idle connections; the pool drops them and opens new
  // ones on demand.
  pool.on('error', onIdleError)
  // pg-pool listens for a client's 'error' only while the client is idle: one that
  // loses its socket while checked out (by Kysely, a transaction, pool.query) emits
  // 'error' with nobody listening, and Node ends the process for it (issue 33). The
  // holder hears of the loss anyway: its query in flight rejects, or its next one
  // does ("not queryable"), the store's edge makes that a StoreUnavailableError,
  // and pg-pool drops the client on release rather than handing it out again. So
  // this listener has nothing left to do but exist; an idle client's loss is
  // reported once, by the pool's own listener above.
  pool.on('connect', (client) => client.on('error', ignoreHeldClientError))
  // A query given up on after query_timeout leaves its connection waiting for an
  // answer that may never come (a connection lost without a word, as when a NAT
  // forgets it): pg does not drop it, and every query given to it after would wait
  // behind the lost one and time out in turn. Ended here, before pg-pool decides
  // (in the same call), the connection is dropped by the pool instead of reused.
  pool.on('release', (_error, client) => {
    if (!awaitsAnswer(client)) return
    client.end().catch(() => {})
  })
  return { pool, db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }) }
}

function ignoreHeldClientError(): void {}

/** True while a query sent on `client` has not been answered: pg's own flag, not in its types. */
function awaitsAnswer(client: pg.PoolClient): boolean {
  return (client as pg.PoolClient & { readyForQuery?: boolean }).readyForQuery === false
}
