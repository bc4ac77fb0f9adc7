// The categories store (categories-store.ts), written once in Kysely for both
// databases, and the one mapping of a categories row to the API's Category.
import { sql, type Kysely, type Selectable } from 'kysely'
import type { CategoriesStore } from '../categories-store.js'
import type { Dialect } from '../dialect.js'
import type { CategoriesTable, Database } from '../schema.js'
import { isUniqueViolation } from '../store-errors.js'
import { completeClaimIn } from './idempotency-claims.js'
import type { Category } from '../../schemas/category.js'
import { foldName } from '../../vocabulary/category-names.js'

/**
 * True for the refusal of deleting a category pets still name: PostgreSQL's foreign
 * key (23503), SQLite's trigger (migration 2026-11-25-010).
 */
function isCategoryInUse(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  return code === '23503' || (code === 'SQLITE_CONSTRAINT_TRIGGER' && message === 'category_in_use')
}

/** True for the refusal of a pet naming a category that does not exist (PostgreSQL's foreign key, SQLite's trigger). */
export function isNoSuchCategory(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  return code === '23503' || (code === 'SQLITE_CONSTRAINT_TRIGGER' && message === 'no_such_category')
}

export function createCategoriesStore(db: Kysely<Database>, dialect: Dialect): CategoriesStore {
  const holderOf = async (name: string, on: Kysely<Database> = db) => (await on.selectFrom('categories').select('id').where('name_key', '=', foldName(name)).executeTakeFirst())?.id

  return {
    async list({ afterId, limit }) {
      return (await db.selectFrom('categories').selectAll().where('id', '>', afterId).orderBy('id').limit(limit).execute()).map(toCategory)
    },

    async find(id) {
      const row = await db.selectFrom('categories').selectAll().where('id', '=', id).executeTakeFirst()
      return row && toCategory(row)
    },

    async insert({ name, description = '' }, now, completion, limit = Infinity) {
      try {
        const category = await db.transaction().execute(async (trx) => {
          if (Number.isFinite(limit)) {
            // PostgreSQL: one insert counts at a time (SQLite's writer is alone already).
            if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext('petstore categories'))`.execute(trx)
            const { count } = await trx.selectFrom('categories').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow()
            if (Number(count) >= limit) return undefined
          }
          // Asked before the insert, whose refusal would still draw an id from PostgreSQL's
          // sequence: the next category would then get another id than on SQLite.
          const holder = await holderOf(name, trx)
          if (holder !== undefined) return { taken: holder }
          const created = toCategory(await trx.insertInto('categories').values({ name, name_key: foldName(name), description, created_at: now }).returningAll().executeTakeFirstOrThrow())
          if (completion) await completeClaimIn(trx, { completion, body: (stored) => stored }, created)
          return created
        })
        if (category !== undefined && 'taken' in category) return { outcome: 'name_taken', categoryId: category.taken }
        if (category !== undefined) return { outcome: 'written', category }
        // Full, but a name held is still told so, naming its category: a create retried
        // without an Idempotency-Key learns the id of the category its first attempt made.
        const holder = await holderOf(name)
        return holder === undefined ? { outcome: 'limit_reached', limit } : { outcome: 'name_taken', categoryId: holder }
      } catch (error) {
        const holder = isUniqueViolation(error) ? await holderOf(name) : undefined
        if (holder === undefined) throw error
        return { outcome: 'name_taken', categoryId: holder }
      }
    },

    async update(id, { name, description }) {
      try {
        const row = await db
          .updateTable('categories')
          // A name sent as it stands keeps its key: a look-alike the migration of 2026-11-28
          // let keep its name (whose fold another category holds) can still be sent whole.
          .set((eb) => ({
            ...(name === undefined ? {} : { name, name_key: eb.case().when('name', '=', name).then(eb.ref('name_key')).else(foldName(name)).end() }),
            ...(description === undefined ? {} : { description }),
          }))
          .where('id', '=', id)
          .returningAll()
          .executeTakeFirst()
        return row ? { outcome: 'written', category: toCategory(row) } : { outcome: 'no_such_category' }
      } catch (error) {
        const holder = isUniqueViolation(error) && name !== undefined ? await holderOf(name) : undefined
        if (holder === undefined) throw error
        return { outcome: 'name_taken', categoryId: holder }
      }
    },

    async remove(id) {
      try {
        const { numDeletedRows } = await db.deleteFrom('categories').where('id', '=', id).executeTakeFirst()
        return numDeletedRows > 0n ? { outcome: 'removed' } : { outcome: 'no_such_category' }
      } catch (error) {
        if (isCategoryInUse(error)) return { outcome: 'category_in_use' }
        throw error
      }
    },
  }
}

/** Maps a categories row to the API's Category: the one place that does. */
function toCategory(row: Selectable<CategoriesTable>): Category {
  return { id: row.id, name: row.name, description: row.description }
}
