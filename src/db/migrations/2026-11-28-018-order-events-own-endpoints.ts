import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// An order's event is marked for fan-out when an endpoint takes it, and only its own
// account's endpoints can. The triggers asked `(owner is null or e.account_id = owner)`,
// written once for pets (no owner) and orders alike: an OR no index serves, so each
// order placed or closed read every account's endpoints (1 ms per 10,000 endpoints, on
// SQLite inside the group commit, which holds every other write). An order always has
// an account: its triggers now ask `e.account_id = owner`, which the account index
// serves. (Pets' and categories' events belong to no account: every endpoint may take
// them, and they still read endpoints until one does.)
const OWNED_SQLITE = '(new.account_id is null or e.account_id = new.account_id)'
const OWNED_POSTGRES = '(rows.owner is null or e.account_id = rows.owner)'
const ORDER_TRIGGERS = ['orders_event_insert', 'orders_event_update']

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') {
    const { rows } = await sql<{ name: string; sql: string }>`select name, sql from sqlite_master where type = 'trigger' and name in (${sql.join(ORDER_TRIGGERS)})`.execute(db)
    if (rows.length !== ORDER_TRIGGERS.length) throw new Error(`expected the triggers ${ORDER_TRIGGERS.join(', ')}`)
    for (const { name, sql: text } of rows) {
      if (!text.includes(OWNED_SQLITE)) throw new Error(`trigger ${name} does not hold the condition this migration restates`)
      await sql.raw(`drop trigger ${name}`).execute(db)
      await sql.raw(text.replace(OWNED_SQLITE, 'e.account_id = new.account_id')).execute(db)
    }
    return
  }
  const { rows } = await sql<{ name: string; definition: string }>`
    select p.proname as name, pg_get_functiondef(p.oid) as definition from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = current_schema() and p.proname in (${sql.join(ORDER_TRIGGERS)})`.execute(db)
  if (rows.length !== ORDER_TRIGGERS.length) throw new Error(`expected the functions ${ORDER_TRIGGERS.join(', ')}`)
  for (const { name, definition } of rows) {
    if (!definition.includes(OWNED_POSTGRES)) throw new Error(`function ${name} does not hold the condition this migration restates`)
    // pg_get_functiondef gives CREATE OR REPLACE FUNCTION: run as is, it replaces the body.
    await sql.raw(definition.replace(OWNED_POSTGRES, 'e.account_id = rows.owner')).execute(db)
  }
}
