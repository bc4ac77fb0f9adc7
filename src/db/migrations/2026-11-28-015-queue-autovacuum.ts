import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// PostgreSQL: autovacuum on the outbox's tables as often as a queue needs. Every
// delivery is updated twice (its lease, its record) and every event once (its fan-out
// mark); each leaves a dead row, and its entry in the partial index the claims and the
// fan-out read from the oldest end (`webhook_deliveries_pending_due`,
// `events_fan_out_pending`) until VACUUM. With the default (a vacuum once a fifth of the
// table is dead) a table of 1,000,000 deliveries holds 200,000 dead entries at the head
// of that index before one: a claim with 200,000 deliveries took 4.5 ms, 7.6 ms once
// 150,000 of them were delivered, and 4.7 ms again after a VACUUM (issue 35). The same
// for ANALYZE: a burst of writes leaves the statistics far behind the tables (the
// queue's connections plan by the indexes anyway: postgres-store.ts). Here both run
// once 1 % of a table (and 1,000 rows) has changed.
//
// SQLite needs nothing: it has no dead rows to vacuum (a deleted index entry is gone).
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return
  for (const table of ['webhook_deliveries', 'events']) {
    await sql`alter table ${sql.table(table)} set (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, autovacuum_analyze_scale_factor = 0.01, autovacuum_analyze_threshold = 1000)`.execute(db)
  }
}
