import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// An account's usage history was the sum, at every read, of the rows of every key the
// account ever had (revoked and expired ones too): keys × hours × outcomes, up to 90
// days of them. A tenant with many keys, or with refusals recorded per key, made each
// `GET /v1/usage/history` read millions of rows: seconds of SQLite's one thread, or
// PostgreSQL's pool, for every tenant. The counts are now also kept per account, added
// to at the same flush, so that an account's history reads at most hours × outcomes
// rows whatever its keys. The rows already written are summed into it once, here.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'postgres') await sql`set local statement_timeout = 0`.execute(db)
  await sql`create table account_usage (
      account_id bigint not null,
      hour bigint not null,
      outcome text not null check (outcome in ('ok', 'rate_limited', 'banned', 'forbidden', 'error')),
      requests bigint not null,
      primary key (account_id, hour, outcome)
    )`.execute(db)
  await sql`create index account_usage_hour on account_usage (hour)`.execute(db)
  await sql`insert into account_usage (account_id, hour, outcome, requests)
      select k.account_id, u.hour, u.outcome, sum(u.requests)
      from api_key_usage u join api_keys k on k.id = u.api_key_id
      group by k.account_id, u.hour, u.outcome`.execute(db)
}
