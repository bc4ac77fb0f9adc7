import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'
import { DELIVERIES_CHANNEL } from './2026-11-24-007-events-and-webhooks.js'

// PostgreSQL: a transaction that NOTIFYs takes one database-wide lock from its commit's
// start to its end (WAL flush included), so every write that reported an event to an
// endpoint committed one at a time: reservations, one transaction each, at 0.54 of
// their rate without an endpoint (docs/benchmarks.md). One wake-up in flight is enough:
// the transaction that takes the advisory lock (without waiting) notifies, and the
// others, committing beside it, leave their events to the fan-out it wakes or to the
// next one (at worst the dispatchers' poll, a second later). SQLite: nothing to do.
//
// The event functions of migration 007 are rewritten in place (pg_get_functiondef),
// not restated here: only their wake-up changes.

const FUNCTIONS = ['pets_event_insert', 'pets_event_update', 'pets_event_delete', 'orders_event_insert', 'orders_event_update']

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return
  const before = `if to_send then perform pg_notify('${DELIVERIES_CHANNEL}', '')`
  const after = `if to_send and pg_try_advisory_xact_lock(hashtext('${DELIVERIES_CHANNEL}')) then perform pg_notify('${DELIVERIES_CHANNEL}', '')`
  for (const name of FUNCTIONS) {
    const { rows } = await sql<{ definition: string }>`select pg_get_functiondef(${name}::regproc) as definition`.execute(db)
    const definition = rows[0]!.definition
    if (!definition.includes(before)) throw new Error(`migration 008: ${name} does not wake the dispatchers as migration 007 made it`)
    await sql.raw(definition.replace(before, after)).execute(db)
  }
}
