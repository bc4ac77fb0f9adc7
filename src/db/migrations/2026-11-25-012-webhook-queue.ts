import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// The delivery queue holds itself together (issue 35):
//
// - Foreign keys: a delivery names its endpoint and its event, an attempt its delivery,
//   endpoint and event; deleting an endpoint deletes its deliveries and their attempts
//   (on delete cascade), so a deleted endpoint has nothing left to be sent.
// - One scheduled delivery per endpoint and event (a partial unique index: manual ones,
//   test events and redeliveries, may repeat): SKIP LOCKED is no longer the only guard
//   against a double fan-out.
// - The indexes the claim (pending and due, oldest first; deliveries under a live
//   lease, by endpoint) and the purge (deliveries and attempts by event) use.
//
// The rows the previous release may have left without their endpoint, event or
// delivery (an endpoint's pending deliveries were deleted with it, its attempts were
// not) are deleted first; a doubled scheduled delivery is merged into the first,
// its attempts with it. SQLite cannot add a foreign key to a table: both tables are
// made again and their rows copied, ids kept.

const INDEXES = [
  'create unique index webhook_deliveries_scheduled_once on webhook_deliveries (endpoint_id, event_id) where trigger = \'scheduled\'',
  'create index webhook_deliveries_pending_due on webhook_deliveries (next_attempt_at, id) where status = \'pending\'',
  'create index webhook_deliveries_leased on webhook_deliveries (lease_until, endpoint_id) where lease_until is not null',
  'create index webhook_deliveries_event on webhook_deliveries (event_id)',
  'create index webhook_attempts_event on webhook_attempts (event_id)',
  'create index webhook_attempts_delivery on webhook_attempts (delivery_id)',
]

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const run = (text: string) => sql.raw(text).execute(db)

  // What no foreign key would accept.
  await run('delete from webhook_deliveries where endpoint_id not in (select id from webhook_endpoints) or event_id not in (select id from events)')
  // A doubled scheduled delivery: its attempts go to the first, then it goes.
  await run(`update webhook_attempts set delivery_id = (
      select min(first.id) from webhook_deliveries first, webhook_deliveries twin
      where twin.id = webhook_attempts.delivery_id and first.endpoint_id = twin.endpoint_id and first.event_id = twin.event_id and first.trigger = 'scheduled'
    ) where delivery_id in (
      select twin.id from webhook_deliveries twin where twin.trigger = 'scheduled' and exists (
        select 1 from webhook_deliveries first where first.trigger = 'scheduled' and first.endpoint_id = twin.endpoint_id and first.event_id = twin.event_id and first.id < twin.id))`)
  await run(`delete from webhook_deliveries where trigger = 'scheduled' and exists (
      select 1 from webhook_deliveries first where first.trigger = 'scheduled' and first.endpoint_id = webhook_deliveries.endpoint_id
        and first.event_id = webhook_deliveries.event_id and first.id < webhook_deliveries.id)`)
  await run(
    'delete from webhook_attempts where delivery_id not in (select id from webhook_deliveries) or endpoint_id not in (select id from webhook_endpoints) or event_id not in (select id from events)',
  )

  if (dialect === 'postgres') {
    await run('drop index webhook_deliveries_due')
    await run('alter table webhook_deliveries add foreign key (endpoint_id) references webhook_endpoints (id) on delete cascade')
    await run('alter table webhook_deliveries add foreign key (event_id) references events (id) on delete cascade')
    await run('alter table webhook_attempts add foreign key (delivery_id) references webhook_deliveries (id) on delete cascade')
    await run('alter table webhook_attempts add foreign key (endpoint_id) references webhook_endpoints (id) on delete cascade')
    await run('alter table webhook_attempts add foreign key (event_id) references events (id) on delete cascade')
  } else {
    // The old tables are set aside under other names (nothing references them), the new
    // ones made under the real names, the rows copied, then the old ones dropped.
    await run('alter table webhook_deliveries rename to webhook_deliveries_before_012')
    await run('alter table webhook_attempts rename to webhook_attempts_before_012')
    await run(`create table webhook_deliveries (
      id integer primary key autoincrement,
      endpoint_id bigint not null references webhook_endpoints (id) on delete cascade,
      event_id bigint not null references events (id) on delete cascade,
      status text not null check (status in ('pending', 'delivered', 'failed')),
      attempts integer not null,
      next_attempt_at bigint not null,
      lease_until bigint,
      trigger text not null default 'scheduled' check (trigger in ('scheduled', 'manual')),
      created_at bigint not null
    )`)
    await run(`create table webhook_attempts (
      id integer primary key autoincrement,
      delivery_id bigint not null references webhook_deliveries (id) on delete cascade,
      endpoint_id bigint not null references webhook_endpoints (id) on delete cascade,
      event_id bigint not null references events (id) on delete cascade,
      trigger text not null check (trigger in ('scheduled', 'manual')),
      at bigint not null,
      duration_ms integer not null,
      response_status integer,
      error text
    )`)
    await run(`insert into webhook_deliveries (id, endpoint_id, event_id, status, attempts, next_attempt_at, lease_until, trigger, created_at)
      select id, endpoint_id, event_id, status, attempts, next_attempt_at, lease_until, trigger, created_at from webhook_deliveries_before_012`)
    await run(`insert into webhook_attempts (id, delivery_id, endpoint_id, event_id, trigger, at, duration_ms, response_status, error)
      select id, delivery_id, endpoint_id, event_id, trigger, at, duration_ms, response_status, error from webhook_attempts_before_012`)
    // Numbering goes on after the old tables' highest id ever (AUTOINCREMENT), not after the highest one copied.
    for (const table of ['webhook_deliveries', 'webhook_attempts']) {
      await run(`delete from sqlite_sequence where name = '${table}'`)
      await run(`insert into sqlite_sequence (name, seq) select '${table}', seq from sqlite_sequence where name = '${table}_before_012'`)
    }
    await run('drop table webhook_attempts_before_012')
    await run('drop table webhook_deliveries_before_012')
    // The indexes of migration 007 went with the old tables; the ones still used come back.
    await run('create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, id)')
    await run('create index webhook_attempts_endpoint on webhook_attempts (endpoint_id, id)')
  }
  for (const index of INDEXES) await run(index)
}
