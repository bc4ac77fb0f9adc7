import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// The events list (GET /v1/events: the caller's events and the public ones, newest first,
// of one type or all) read every public event for each page. Its condition
// `account_id = ? or account_id is null` took, on SQLite, both ranges of the
// `(account_id, id)` index and sorted all they held: every pet event ever kept, 19 ms a
// page at 300,000 events, on the writer's connection, which holds the event loop. On
// PostgreSQL a type few events have (`?type=webhook_endpoint.disabled`) read the whole
// table the same way.
//
// The list now reads each (owner, type) apart from its newest end, at most a page from
// each (sql/webhook-endpoints.ts): these two partial indexes give every such range in id
// order, the public events' by type and the accounts' by account and type. Each event
// is in exactly one of them, so a write costs what the index they replace cost. (A
// PostgreSQL btree does not order by `id` after an `account_id is null` condition:
// hence a partial index without the column, not one index with it.)
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  // The pool's statement_timeout (5 s) is for requests: building an index over 30 days of
  // events can take longer (in this migration's transaction only).
  if (dialect === 'postgres') await sql`set local statement_timeout = 0`.execute(db)
  await sql`create index events_public_type on events (type, id) where account_id is null`.execute(db)
  await sql`create index events_account_type on events (account_id, type, id) where account_id is not null`.execute(db)
  await sql`drop index events_account_id`.execute(db)
}
