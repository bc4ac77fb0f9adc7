import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// Whether any endpoint takes a pet's or a category's event, asked by the event triggers
// at every such write to mark the event for fan-out, read every enabled endpoint until
// one took the type: with none taking it (endpoints that want order events only, the
// common case), all of them, at each write. That is about 1 ms per 10,000 endpoints a
// pet written; on SQLite inside the group commit, which holds every other write, and on
// PostgreSQL once per row of the statement. (Order events ask only their own account's
// endpoints: migration 2026-11-28-018.)
//
// `webhook_subscriptions` holds, for each enabled endpoint, a row per event type it
// takes (`*` for all), kept by triggers on `webhook_endpoints` in the transaction of
// every write that creates an endpoint, changes its types or enables or disables it (a
// deletion cascades), whoever writes it. The public events' triggers now ask it, by its
// primary key: one index probe however many endpoints there are. It answers only
// "might any endpoint take this type"; the fan-out and the claim still apply the
// subscription rule itself (sql/webhook-rows.ts `takes`). A row too many (an endpoint's
// account disabled) costs a fan-out that finds nothing; a row is never missing.
//
// Types never hold a space or a quote (the API and the command line take them from
// the vocabulary), so SQLite, which has no split, reads the list as a JSON array.
const PUBLIC_EVENT_TRIGGERS = ['pets_event_insert', 'pets_event_update', 'pets_event_delete', 'categories_event_insert', 'categories_event_update', 'categories_event_delete']

/** The check the public events' triggers held (migrations 007 and 010), the type captured: the pets' has an owner clause that is always true for them. */
const ANY_ENDPOINT = {
  sqlite:
    /exists \(select 1 from webhook_endpoints e where e\.disabled_at is null and \(e\.enabled_events = '\*' or instr\(' ' \|\| e\.enabled_events \|\| ' ', ' ' \|\| ('[a-z_.]+') \|\| ' '\) > 0\)(?: and \(null is null or e\.account_id = null\))?\)/,
  postgres:
    /exists \(select 1 from webhook_endpoints e where e\.disabled_at is null and \(e\.enabled_events = '\*' or strpos\(' ' \|\| e\.enabled_events \|\| ' ', ' ' \|\| (rows\.type) \|\| ' '\) > 0\)(?: and \(rows\.owner is null or e\.account_id = rows\.owner\))?\)/,
}
/** Two probes of the primary key: SQLite makes an ephemeral table for `s.type in (?, '*')` at every row, 1.3 µs a create (bench:sql). */
const subscribed = (_: string, type: string) =>
  `(exists (select 1 from webhook_subscriptions s where s.type = ${type}) or exists (select 1 from webhook_subscriptions s where s.type = '*'))`

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const run = (text: string) => sql.raw(text).execute(db)
  const id = dialect === 'sqlite' ? 'integer' : 'bigint'
  await run(`create table webhook_subscriptions (
    type text not null,
    endpoint_id ${id} not null references webhook_endpoints (id) on delete cascade,
    primary key (type, endpoint_id)
  )${dialect === 'sqlite' ? ' without rowid' : ''}`)
  await run('create index webhook_subscriptions_endpoint_id on webhook_subscriptions (endpoint_id)')

  if (dialect === 'sqlite') {
    const types = (list: string) => `json_each('["' || replace(${list}, ' ', '","') || '"]')`
    await run(`insert into webhook_subscriptions (type, endpoint_id)
      select distinct t.value, e.id from webhook_endpoints e, ${types('e.enabled_events')} t where e.disabled_at is null`)
    await run(`create trigger webhook_subscriptions_insert after insert on webhook_endpoints when new.disabled_at is null begin
      insert into webhook_subscriptions (type, endpoint_id) select distinct value, new.id from ${types('new.enabled_events')};
    end`)
    await run(`create trigger webhook_subscriptions_update after update of enabled_events, disabled_at on webhook_endpoints begin
      delete from webhook_subscriptions where endpoint_id = old.id;
      insert into webhook_subscriptions (type, endpoint_id) select distinct value, new.id from ${types('new.enabled_events')} where new.disabled_at is null;
    end`)
    const { rows } = await sql<{ name: string; sql: string }>`select name, sql from sqlite_master where type = 'trigger' and name in (${sql.join(PUBLIC_EVENT_TRIGGERS)})`.execute(db)
    if (rows.length !== PUBLIC_EVENT_TRIGGERS.length) throw new Error(`expected the triggers ${PUBLIC_EVENT_TRIGGERS.join(', ')}`)
    for (const { name, sql: text } of rows) {
      if (!ANY_ENDPOINT.sqlite.test(text)) throw new Error(`trigger ${name} does not hold the condition this migration restates`)
      await run(`drop trigger ${name}`)
      await run(text.replace(ANY_ENDPOINT.sqlite, subscribed))
    }
    return
  }

  await run(`insert into webhook_subscriptions (type, endpoint_id)
    select distinct unnest(string_to_array(enabled_events, ' ')), id from webhook_endpoints where disabled_at is null`)
  // Without statistics the planner reads the whole table at each probe (every row of
  // every statement that writes pets) until autovacuum first analyzes it.
  await run('analyze webhook_subscriptions')
  await run(`create function webhook_subscriptions_kept() returns trigger language plpgsql as $$
    begin
      if tg_op = 'UPDATE' then
        delete from webhook_subscriptions where endpoint_id = old.id;
      end if;
      if new.disabled_at is null then
        insert into webhook_subscriptions (type, endpoint_id) select distinct unnest(string_to_array(new.enabled_events, ' ')), new.id;
      end if;
      return null;
    end $$`)
  await run(`create trigger webhook_subscriptions_kept after insert or update of enabled_events, disabled_at on webhook_endpoints
    for each row execute function webhook_subscriptions_kept()`)
  const { rows } = await sql<{ name: string; definition: string }>`
    select p.proname as name, pg_get_functiondef(p.oid) as definition from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = current_schema() and p.proname in (${sql.join(PUBLIC_EVENT_TRIGGERS)})`.execute(db)
  if (rows.length !== PUBLIC_EVENT_TRIGGERS.length) throw new Error(`expected the functions ${PUBLIC_EVENT_TRIGGERS.join(', ')}`)
  for (const { name, definition } of rows) {
    if (!ANY_ENDPOINT.postgres.test(definition)) throw new Error(`function ${name} does not hold the condition this migration restates`)
    // pg_get_functiondef gives CREATE OR REPLACE FUNCTION: run as is, it replaces the body.
    await run(definition.replace(ANY_ENDPOINT.postgres, subscribed))
  }
}
