import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// A claim looked for due deliveries among the oldest due of all (a bounded window, so
// that its cost does not grow with the backlog), then dropped those of endpoints with no
// room. When one endpoint that never answers owned the whole window, as a tenant's
// receiver down for an hour does, every claim found nothing and every other tenant's
// deliveries waited behind it. A claim now also looks endpoint by endpoint (the
// endpoints with pending deliveries, hopped one index seek at a time, sql/delivery-queue.ts
// `choose`): this index gives each endpoint's pending deliveries oldest due first.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  // Over a large queue, building it may outlast the pool's statement_timeout (this transaction only).
  if (dialect === 'postgres') await sql`set local statement_timeout = 0`.execute(db)
  await sql`create index webhook_deliveries_endpoint_due on webhook_deliveries (endpoint_id, next_attempt_at, id) where status = 'pending'`.execute(db)
}
