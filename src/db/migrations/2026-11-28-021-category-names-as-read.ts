import { sql, type Kysely } from 'kysely'
import { foldName } from '../../vocabulary/category-names.js'

// Category names compared as people read them (vocabulary/category-names.ts): `Dogs `,
// ` Dogs`, `Dogs` with a zero-width space, fullwidth `Ｄｏｇｓ` are now the name `Dogs`.
// Each category's `name_key` is folded again. Where categories made before this
// migration now fold alike, the oldest (the lowest id, so the seeded ones) takes the
// name; the others keep the key they had (or, should another category now hold it, one
// no fold makes), and stay, as they were, distinct categories: nothing is
// renamed or merged, and pets keep their categories.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>): Promise<void> {
  const rows = (await db.selectFrom('categories').select(['id', 'name', 'name_key']).orderBy('id').execute()) as { id: number | string; name: string; name_key: string }[]
  const keys = new Map<number, string>()
  const taken = new Set<string>()
  for (const row of rows) {
    const key = foldName(row.name)
    if (taken.has(key)) continue
    taken.add(key)
    keys.set(Number(row.id), key)
  }
  for (const row of rows) {
    if (keys.has(Number(row.id))) continue
    // Its old key, or else one no fold makes (folds are trimmed: it starts with a space).
    let key = row.name_key
    for (let n = 0; taken.has(key); n++) key = ` ${row.name_key} #${row.id}${n > 0 ? `.${n}` : ''}`
    taken.add(key)
    keys.set(Number(row.id), key)
  }
  const changed = rows.filter((row) => keys.get(Number(row.id)) !== row.name_key)
  if (changed.length === 0) return
  // Keys move between rows (one takes the key another gives up): without the index
  // meanwhile, no statement meets a key not yet given up. In the migration's transaction.
  await sql`drop index categories_name_key`.execute(db)
  for (const row of changed) await db.updateTable('categories').set({ name_key: keys.get(Number(row.id)) }).where('id', '=', row.id).execute()
  await sql`create unique index categories_name_key on categories (name_key)`.execute(db)
}
