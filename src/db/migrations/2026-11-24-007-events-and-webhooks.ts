import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// Events and their webhook deliveries, as a transactional outbox. Triggers on `pets`
// and `orders` write an event row, and one pending delivery per subscribed endpoint,
// in the transaction of the write they report: a committed change always has its
// event, a rolled-back one never does, and a crash after the commit loses nothing
// (the deliveries wait in the table for a dispatcher). Triggers, as for the
// inventory's counts: no write path (the service's batched statements, the CLI,
// psql) can forget them.
//
// An event's `data` is the row as it was written (column names, times in ms); the
// service renders it as the API's resource (webhooks/events.ts). `api_key_id`: the key
// an order event concerns; null for pet events, which every key may see.
//
// An endpoint takes an event when it is enabled, lists the type (or `*`), and for an
// event with an owner, belongs to that key.

/** The NOTIFY channel of new deliveries (webhooks-store.ts's `watch`). */
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
    created_at bigint not null
  )`,
  'create index events_created_at on events (created_at)',
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

/** The endpoints an event of type `type` (an SQL expression) owned by `owner` goes to. */
const subscribed = (type: string, owner: string) =>
  `e.disabled_at is null and (e.enabled_events = '*' or instr(' ' || e.enabled_events || ' ', ' ' || ${type} || ' ') > 0) and (${owner} is null or e.api_key_id = ${owner})`

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
async function upSqlite(db: Kysely<any>): Promise<void> {
  const now = "cast(round((julianday('now') - 2440587.5) * 86400000) as integer)"
  // One event and its deliveries: last_insert_rowid() is the event's id while the trigger runs.
  const emit = (type: string, owner: string, data: string) => `
      insert into events (type, api_key_id, data, created_at) values (${type}, ${owner}, ${data}, ${now});
      insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at)
        select e.id, last_insert_rowid(), 'pending', 0, ${now}, ${now} from webhook_endpoints e where ${subscribed(type, owner)};`
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
        insert into events (type, api_key_id, data, created_at)
        select type, owner, data, petstore_now_ms() from (${rows}) as rows order by id
        returning id, type, api_key_id
      )
      insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at)
      select e.id, ev.id, 'pending', 0, petstore_now_ms(), petstore_now_ms() from ev join webhook_endpoints e on ${subscribed('ev.type', 'ev.api_key_id').replaceAll('instr(', 'strpos(')};
      -- Wakes the dispatchers that LISTEN, at commit (NOTIFY is transactional); none when nothing is to be sent.
      if found then perform pg_notify('${DELIVERIES_CHANNEL}', ''); end if;
      return null;`
  const pet = (row: string) => `json_build_object('id', ${row}.id, 'name', ${row}.name, 'category_id', ${row}.category_id, 'status', ${row}.status)::text`
  const order = (row: string) =>
    `json_build_object('id', ${row}.id, 'pet_id', ${row}.pet_id, 'api_key_id', ${row}.api_key_id, 'status', ${row}.status, 'placed_at', ${row}.placed_at, 'closed_at', ${row}.closed_at)::text`
  const fn = async (name: string, rows: string) =>
    sql.raw(`create function ${name}() returns trigger language plpgsql as $$ begin ${emit(rows)} end $$`).execute(db)
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
