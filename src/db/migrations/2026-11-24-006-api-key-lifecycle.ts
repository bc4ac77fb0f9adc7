import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// Keys with a lifecycle: scopes, an expiry, disabling, rotation, and usage by hour.
// - scopes: space-separated (RFC 6750 §3.1's scope syntax). Keys made before scopes
//   existed keep doing what they did: every scope but keys:*.
// - expires_at, disabled_at: Unix ms, null for never / enabled.
// - counter_identity: the rate-limit identity of the key a roll made this one from,
//   so that the old and the new key share one limit while both work.
// - replaced_by: the key a roll made from this one.
// - api_key_usage: requests per key, hour and outcome, added to in batches.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const all = 'pets:read pets:write orders:read orders:write usage:read'
  const columns = [
    sql`alter table api_keys add column scopes text not null default ${sql.lit(all)}`,
    sql`alter table api_keys add column expires_at bigint`,
    sql`alter table api_keys add column disabled_at bigint`,
    sql`alter table api_keys add column counter_identity text`,
    sql`alter table api_keys add column replaced_by bigint`,
  ]
  const usage = sql`create table api_key_usage (
      api_key_id bigint not null,
      hour bigint not null,
      outcome text not null check (outcome in ('ok', 'rate_limited', 'banned', 'forbidden', 'error')),
      requests bigint not null,
      primary key (api_key_id, hour, outcome)
    )`
  if (dialect === 'postgres') {
    // PostgreSQL runs a migration in a transaction of its own.
    for (const statement of columns) await statement.execute(db)
    await usage.execute(db)
    await sql`create index api_key_usage_hour on api_key_usage (hour)`.execute(db)
    return
  }
  // Kysely runs SQLite migrations outside a transaction: one of our own, so a crash leaves all or nothing.
  await sql`begin immediate`.execute(db)
  try {
    for (const statement of columns) await statement.execute(db)
    await usage.execute(db)
    await sql`create index api_key_usage_hour on api_key_usage (hour)`.execute(db)
    await sql`commit`.execute(db)
  } catch (error) {
    await sql`rollback`.execute(db).catch(() => {})
    throw error
  }
}
