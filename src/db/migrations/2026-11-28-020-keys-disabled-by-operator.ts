import { sql, type Kysely } from 'kysely'

// Who disabled a key: the operator (the command line), or a key with keys:write (the
// API). A key the operator disabled is enabled again by the operator alone: any key of
// its account with keys:write could undo `petstore keys disable` (PATCH {"enabled": true}),
// so an operator's stop for abuse held only until the tenant noticed. Keys disabled
// before this migration count as disabled over the API, as they were treated.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table api_keys add column disabled_by_operator integer not null default 0`.execute(db)
}
