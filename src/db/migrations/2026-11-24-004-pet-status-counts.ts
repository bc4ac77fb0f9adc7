import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// The inventory, exact and O(1): per-status counts of pets, kept by triggers on `pets`
// in the same transaction as every write that adds, removes or re-statuses a pet,
// whoever makes it (the service, the CLI, psql, a bulk load). Triggers rather than
// code in the service's statements: a new write path (an update, a delete) cannot
// forget them, and a write by hand cannot make the counts wrong.
//
// SQLite has one writer at a time: one row per status, row triggers (in-process, a
// few microseconds each).
//
// PostgreSQL has many writers: a count row is locked from its update until its
// transaction commits, so one row per status would queue every writer behind the one
// flushing its commit. The counts are spread over 64 slots per status, each backend
// adding to its own (`pg_backend_pid() % 64`), and summed at read time (at most 192
// rows). A slot may go negative (a pet counted in one slot is reserved from another);
// the sums are exact. Statement-level triggers with transition tables: one count
// update per statement and status, so a turn's batched INSERT or reservation statement
// pays once, not once per row. Rows of a statement are added in status order, so two
// backends sharing a slot lock its rows in the same order (no deadlock).
//
// Existing pets are counted here, with writes to `pets` held off (SHARE ROW EXCLUSIVE)
// until this migration commits: a pet inserted meanwhile by an instance still running
// the previous version would otherwise be neither counted nor seen by a trigger.
const SLOTS = 64

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect === 'sqlite') await upSqlite(db)
  else await upPostgres(db)
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
async function upSqlite(db: Kysely<any>): Promise<void> {
  // Kysely runs SQLite migrations outside a transaction (its adapter reports no
  // transactional DDL): one of our own, taking the write lock first, so that no other
  // process (a running server, the CLI) adds a pet between the backfill and the
  // triggers, and a failure leaves nothing half made.
  await sql`begin immediate`.execute(db)
  try {
    // n >= 0: a count made wrong by hand fails the next write that would take it below zero, rather than drift.
    // WITHOUT ROWID: the row is found by its key in one B-tree, not an index then the table.
    await sql`create table pet_status_counts (status text primary key, n integer not null check (n >= 0)) without rowid`.execute(db)
    await sql`insert into pet_status_counts (status, n) values ('available', 0), ('pending', 0), ('sold', 0)`.execute(db)
    await sql`update pet_status_counts set n = (select count(*) from pets where pets.status = pet_status_counts.status)`.execute(db)
    await sql`create trigger pets_count_insert after insert on pets begin
        update pet_status_counts set n = n + 1 where status = new.status;
      end`.execute(db)
    await sql`create trigger pets_count_delete after delete on pets begin
        update pet_status_counts set n = n - 1 where status = old.status;
      end`.execute(db)
    // One statement for both rows: a reservation's or a close's status change is on the hot path.
    await sql`create trigger pets_count_update after update of status on pets when old.status is not new.status begin
        update pet_status_counts set n = n + (status = new.status) - (status = old.status) where status in (old.status, new.status);
      end`.execute(db)
    await sql`commit`.execute(db)
  } catch (error) {
    await sql`rollback`.execute(db).catch(() => {})
    throw error
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
async function upPostgres(db: Kysely<any>): Promise<void> {
  await sql`lock table pets in share row exclusive mode`.execute(db)
  await sql`create table pet_status_counts (
      slot smallint not null,
      status text not null,
      n bigint not null,
      primary key (slot, status)
    )`.execute(db)
  await sql`insert into pet_status_counts (slot, status, n) select 0, status, count(*) from pets group by status`.execute(db)
  // Adds each status's change in the statement's rows (new minus old) to this backend's slot.
  const addChanges = (changes: string) => `
      insert into pet_status_counts (slot, status, n)
      select pg_backend_pid() % ${SLOTS}, status, sum(change) from (${changes}) as changes
      group by status having sum(change) <> 0 order by status
      on conflict (slot, status) do update set n = pet_status_counts.n + excluded.n;
      return null;`
  await sql
    .raw(
      `create function pets_count_insert() returns trigger language plpgsql as $$ begin
      ${addChanges('select status, 1 as change from new_pets')}
    end $$`,
    )
    .execute(db)
  await sql
    .raw(
      `create function pets_count_update() returns trigger language plpgsql as $$ begin
      ${addChanges('select status, 1 as change from new_pets union all select status, -1 from old_pets')}
    end $$`,
    )
    .execute(db)
  await sql
    .raw(
      `create function pets_count_delete() returns trigger language plpgsql as $$ begin
      ${addChanges('select status, -1 as change from old_pets')}
    end $$`,
    )
    .execute(db)
  await sql`create function pets_count_truncate() returns trigger language plpgsql as $$ begin
      delete from pet_status_counts;
      return null;
    end $$`.execute(db)
  await sql`create trigger pets_count_insert after insert on pets referencing new table as new_pets for each statement execute function pets_count_insert()`.execute(db)
  // (Transition tables cannot go with UPDATE OF a column list: every UPDATE of pets
  // fires it, and a statement that moves no pet between statuses adds nothing.)
  await sql`create trigger pets_count_update after update on pets referencing old table as old_pets new table as new_pets for each statement execute function pets_count_update()`.execute(
    db,
  )
  await sql`create trigger pets_count_delete after delete on pets referencing old table as old_pets for each statement execute function pets_count_delete()`.execute(db)
  await sql`create trigger pets_count_truncate after truncate on pets for each statement execute function pets_count_truncate()`.execute(db)
}
