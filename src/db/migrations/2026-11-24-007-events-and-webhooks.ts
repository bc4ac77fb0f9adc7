import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// Events as a transactional outbox. Triggers on `pets` and `orders` write an event row
// in the transaction of the write it reports: a committed change always has its event,
// a rolled-back one never does, and a crash after the commit loses nothing. Triggers,
// as for the inventory's counts: no write path (the service's batched statements, the
// CLI, psql) can forget them.
//
// The write pays for the event alone. An event some endpoint is subscribed to is
// marked `fan_out_pending` (a partial index holds just those); a dispatcher, outside
// any request, turns it into one delivery per subscribed endpoint and clears the mark,
// in one transaction (webhooks-store.ts's `fanOut`). Not a cursor over ids: PostgreSQL
// commits ids out of order, and a cursor would step over one still in flight.
//
// An event's `data` is the row as it was written (column names, times in ms); the
// service renders it as the API's resource (webhooks/events.ts). `api_key_id`: the key
// an order event concerns; null for pet events, which every key may see.
//
// An endpoint takes an event when it is enabled, lists the type (or `*`), and for an
// event with an owner, belongs to that key.

/** The NOTIFY channel of events to fan out (webhooks-store.ts's `watch`). */
export const DELIVERIES_CHANNEL = 'petstore_webhook_deliveries'

const ALL_BEFORE = 'pets:read pets:write orders:read orders:write usage:read'
const ALL_NOW = `${ALL_BEFORE} events:read webhooks:read webhooks:write`

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') await upSqlite(db)
  else await upPostgres(db)
}

const tables = (id: string) => [
  `create table events (
    id ${id},
    type text not null,
    api_key_id bigint,
    data text not null,
    created_at bigint not null,
    fan_out_pending smallint not null default 0
  )`,
  'create index events_created_at on events (created_at)',
  'create index events_fan_out_pending on events (id) where fan_out_pending = 1',
  'create index events_api_key_id on events (api_key_id, id)',
  `create table webhook_endpoints (
    id ${id},
    api_key_id bigint not null,
    url text not null,
    description text not null,
    enabled_events text not null,
    secret text not null,
    previous_secret text,
    previous_secret_until bigint,
    disabled_at bigint,
    failing_since bigint,
    created_at bigint not null
  )`,
  'create index webhook_endpoints_api_key_id on webhook_endpoints (api_key_id, id)',
  `create table webhook_deliveries (
    id ${id},
    endpoint_id bigint not null,
    event_id bigint not null,
    status text not null check (status in ('pending', 'delivered', 'failed')),
    attempts integer not null,
    next_attempt_at bigint not null,
    lease_until bigint,
    trigger text not null default 'scheduled' check (trigger in ('scheduled', 'manual')),
    created_at bigint not null
  )`,
  'create index webhook_deliveries_due on webhook_deliveries (status, next_attempt_at)',
  'create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id, id)',
  `create table webhook_attempts (
    id ${id},
    delivery_id bigint not null,
    endpoint_id bigint not null,
    event_id bigint not null,
    trigger text not null check (trigger in ('scheduled', 'manual')),
    at bigint not null,
    duration_ms integer not null,
    response_status integer,
    error text
  )`,
  'create index webhook_attempts_endpoint on webhook_attempts (endpoint_id, id)',
  // Keys made with the `all` preset (every scope but keys:*) get the new scopes too.
  `update api_keys set scopes = '${ALL_NOW}' where scopes = '${ALL_BEFORE}'`,
]

/** The endpoints an event of type `type` (an SQL expression) owned by `owner` goes to (`position`: SQLite's instr, PostgreSQL's strpos). */
const subscribed = (type: string, owner: string, position = 'instr') =>
  `e.disabled_at is null and (e.enabled_events = '*' or ${position}(' ' || e.enabled_events || ' ', ' ' || ${type} || ' ') > 0) and (${owner} is null or e.api_key_id = ${owner})`
/** 1 when some endpoint takes the event: a dispatcher is to fan it out. */
const pending = (type: string, owner: string, position?: string) =>
  `case when exists (select 1 from webhook_endpoints e where ${subscribed(type, owner, position)}) then 1 else 0 end`

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
async function upSqlite(db: Kysely<any>): Promise<void> {
  const now = "cast(round((julianday('now') - 2440587.5) * 86400000) as integer)"
  const emit = (type: string, owner: string, data: string) => `
      insert into events (type, api_key_id, data, created_at, fan_out_pending) values (${type}, ${owner}, ${data}, ${now}, ${pending(type, owner)});`
  const pet = (row: string) => `json_object('id', ${row}.id, 'name', ${row}.name, 'category_id', ${row}.category_id, 'status', ${row}.status)`
  const order = (row: string) =>
    `json_object('id', ${row}.id, 'pet_id', ${row}.pet_id, 'api_key_id', ${row}.api_key_id, 'status', ${row}.status, 'placed_at', ${row}.placed_at, 'closed_at', ${row}.closed_at)`
  await sql`begin immediate`.execute(db)
  try {
    for (const statement of tables('integer primary key autoincrement')) await sql.raw(statement).execute(db)
    await sql.raw(`create trigger pets_event_insert after insert on pets begin ${emit("'pet.created'", 'null', pet('new'))} end`).execute(db)
    await sql
      .raw(
        `create trigger pets_event_update after update on pets
          when old.name is not new.name or old.category_id is not new.category_id or old.status is not new.status
          begin ${emit("'pet.updated'", 'null', pet('new'))} end`,
      )
      .execute(db)
    await sql.raw(`create trigger pets_event_delete after delete on pets begin ${emit("'pet.deleted'", 'null', pet('old'))} end`).execute(db)
    await sql.raw(`create trigger orders_event_insert after insert on orders begin ${emit("'order.placed'", 'new.api_key_id', order('new'))} end`).execute(db)
    await sql
      .raw(
        `create trigger orders_event_update after update of status on orders when old.status is not new.status and new.status in ('completed', 'cancelled')
          begin ${emit("'order.' || new.status", 'new.api_key_id', order('new'))} end`,
      )
      .execute(db)
    await sql`commit`.execute(db)
  } catch (error) {
    await sql`rollback`.execute(db).catch(() => {})
    throw error
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
async function upPostgres(db: Kysely<any>): Promise<void> {
  for (const statement of tables('bigint generated always as identity primary key')) await sql.raw(statement).execute(db)
  await sql.raw("create function petstore_now_ms() returns bigint language sql stable as $$ select floor(extract(epoch from statement_timestamp()) * 1000)::bigint $$").execute(db)
  // Statement-level, as the counts: a turn's batched INSERT writes its events in one statement.
  // `rows` yields (type, owner, data) per event.
  const emit = (rows: string) => `
      with ev as (
        insert into events (type, api_key_id, data, created_at, fan_out_pending)
        select type, owner, data, petstore_now_ms(), ${pending('rows.type', 'rows.owner', 'strpos')} from (${rows}) as rows order by id
        returning fan_out_pending
      )
      select coalesce(max(fan_out_pending), 0) = 1 into to_send from ev;
      -- Wakes the dispatchers that LISTEN, at commit (NOTIFY is transactional); none when nothing is to be sent.
      if to_send then perform pg_notify('${DELIVERIES_CHANNEL}', ''); end if;
      return null;`
  const pet = (row: string) => `json_build_object('id', ${row}.id, 'name', ${row}.name, 'category_id', ${row}.category_id, 'status', ${row}.status)::text`
  const order = (row: string) =>
    `json_build_object('id', ${row}.id, 'pet_id', ${row}.pet_id, 'api_key_id', ${row}.api_key_id, 'status', ${row}.status, 'placed_at', ${row}.placed_at, 'closed_at', ${row}.closed_at)::text`
  const fn = async (name: string, rows: string) =>
    sql.raw(`create function ${name}() returns trigger language plpgsql as $$ declare to_send boolean; begin ${emit(rows)} end $$`).execute(db)
  await fn('pets_event_insert', `select n.id, 'pet.created' as type, null::bigint as owner, ${pet('n')} as data from new_pets n`)
  await fn(
    'pets_event_update',
    `select n.id, 'pet.updated' as type, null::bigint as owner, ${pet('n')} as data from new_pets n join old_pets o on o.id = n.id
       where (o.name, o.category_id, o.status) is distinct from (n.name, n.category_id, n.status)`,
  )
  await fn('pets_event_delete', `select o.id, 'pet.deleted' as type, null::bigint as owner, ${pet('o')} as data from old_pets o`)
  await fn('orders_event_insert', `select n.id, 'order.placed' as type, n.api_key_id as owner, ${order('n')} as data from new_orders n`)
  await fn(
    'orders_event_update',
    `select n.id, 'order.' || n.status as type, n.api_key_id as owner, ${order('n')} as data from new_orders n join old_orders o on o.id = n.id
       where o.status is distinct from n.status and n.status in ('completed', 'cancelled')`,
  )
  await sql`create trigger pets_event_insert after insert on pets referencing new table as new_pets for each statement execute function pets_event_insert()`.execute(db)
  await sql`create trigger pets_event_update after update on pets referencing old table as old_pets new table as new_pets for each statement execute function pets_event_update()`.execute(db)
  await sql`create trigger pets_event_delete after delete on pets referencing old table as old_pets for each statement execute function pets_event_delete()`.execute(db)
  await sql`create trigger orders_event_insert after insert on orders referencing new table as new_orders for each statement execute function orders_event_insert()`.execute(db)
  await sql`create trigger orders_event_update after update on orders referencing old table as old_orders new table as new_orders for each statement execute function orders_event_update()`.execute(db)
}
