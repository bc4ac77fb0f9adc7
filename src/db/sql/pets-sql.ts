// Every statement on the pets table, in one place: the stores of both databases
// (sqlite/pets-store.ts, postgres/pets-store.ts) prepare these texts.
import type { Selectable } from 'kysely'
import type { ListPetsQuery, PetChanges } from '../pets-store.js'
import type { Dialect } from '../dialect.js'
import type { PetsTable } from '../schema.js'
import type { Inventory } from '../../schemas/order.js'
import type { Pet, PetStatus } from '../../schemas/pet.js'

/** The columns a Pet is read from, in the order raw (array) rows use. */
export const PET_COLUMNS = 'id, name, category_id, status'

/** The hot-path statements, with the dialect's placeholder (`?` or `$n`). */
export function petsStatements(param: (n: number) => string) {
  return {
    listAll: `SELECT ${PET_COLUMNS} FROM pets WHERE id > ${param(1)} ORDER BY id LIMIT ${param(2)}`,
    listByStatus: `SELECT ${PET_COLUMNS} FROM pets WHERE status = ${param(1)} AND id > ${param(2)} ORDER BY id LIMIT ${param(3)}`,
    byId: `SELECT ${PET_COLUMNS} FROM pets WHERE id = ${param(1)}`,
    insert: `INSERT INTO pets (name, category_id, status, created_at) VALUES (${param(1)}, ${param(2)}, ${param(3)}, ${param(4)})`,
    update: `UPDATE pets SET name = ${param(1)}, category_id = ${param(2)}, status = ${param(3)} WHERE id = ${param(4)}`,
    remove: `DELETE FROM pets WHERE id = ${param(1)}`,
    /** Whether a category exists (a pet must name one). */
    categoryExists: `SELECT 1 FROM categories WHERE id = ${param(1)}`,
    /** The open order that holds a pet, if any (orders_one_open_per_pet: at most one). */
    openOrderOf: `SELECT id, account_id AS "accountId" FROM orders WHERE pet_id = ${param(1)} AND status = 'placed'`,
    /**
     * Exact counts per status, kept by triggers on pets (migrations/2026-11-24-004):
     * at most a few hundred rows, whatever the number of pets.
     */
    countByStatus: 'SELECT status, sum(n) AS count FROM pet_status_counts GROUP BY status',
  }
}

/** A statement with its values, in the order of its placeholders. */
export interface Statement {
  text: string
  values: unknown[]
}

/**
 * The filtered list (any filter but the plain list's, any sort), for `dialect`. The
 * text depends only on which filters are given and the sort, never on their values
 * (lists are one parameter: SQLite json_each, PostgreSQL arrays; a list of one value is
 * an equality), so each store prepares a handful of statements at most.
 *
 * - `q`: SQLite's FTS5 trigram table `pets_search`, read in rowid order so that a page
 *   of matches ends early; PostgreSQL's ILIKE, through the pg_trgm index on name.
 * - `name` order compares by code point on both (SQLite BINARY, PostgreSQL "C"), so a
 *   page starts at the same place whichever store answers.
 */
export function filteredListStatement(dialect: Dialect, query: ListPetsQuery): Statement {
  const { values, param, list } = placeholders(dialect)
  const sort = query.sort ?? 'id'
  const searched = query.q !== undefined && dialect === 'sqlite'
  // With the FTS table leading, its rowid is the pet's id: ordering and bounding by it lets FTS5 stop at the page's end.
  const id = searched ? 'pets_search.rowid' : 'p.id'
  const where: string[] = []
  if (query.q !== undefined) {
    // Names are stored as sent, an accented letter composed (NFC) or not (NFD): q is
    // looked for both ways (one way alone for most text, which reads the same in both).
    // The composed form is left out when under 3 characters (é and a combining accent
    // composed): the trigram indexes cannot answer it, and FTS5 would match nothing with
    // it. The decomposed one is never shorter than q.
    const forms = searchForms(query.q)
    where.push(
      dialect === 'sqlite'
        ? `pets_search MATCH ${param(forms.map(ftsPhrase).join(' OR '))}`
        : `(${forms.map((form) => `p.name ILIKE ${param(`%${likeEscaped(form)}%`)}`).join(' OR ')})`,
    )
  }
  where.push(...columnFilters(query, list))
  const name = dialect === 'sqlite' ? 'p.name' : 'p.name COLLATE "C"'
  if (query.afterId > 0) {
    if (sort === 'id') where.push(`${id} > ${param(query.afterId)}`)
    else if (sort === '-id') where.push(`${id} < ${param(query.afterId)}`)
    else where.push(`(${name}, p.id) > (${param(query.afterName ?? '')}, ${param(query.afterId)})`)
  }
  const order = sort === 'id' ? id : sort === '-id' ? `${id} DESC` : `${name}, p.id`
  const from = searched ? 'pets_search JOIN pets p ON p.id = pets_search.rowid' : 'pets p'
  const text = `SELECT p.id, p.name, p.category_id, p.status FROM ${from}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY ${order} LIMIT ${param(query.limit)}`
  return { text, values }
}

/**
 * The SQL function a streamed statement calls on each row that fails its filter
 * (sqlite/pets-store.ts defines it on its streaming connection): true every so many
 * calls, so that the statement hands back a row now and then (its last column 0) even
 * where few rows pass, and its reader may let other work go first.
 */
export const STREAM_TICK = 'petstore_stream_tick'

/**
 * A search (`q`) in id order with a status or category filter, on SQLite, as a stream:
 * the pets after the cursor (before it, with `-id`) whose names hold `q`, in FTS5 rowid
 * order, each with whether it passes the filters (the last column), those that fail
 * coming back only at STREAM_TICK's ticks. A common text with a rare filter
 * (`q=the pet&status=sold`) read every match in one step, up to a second of the
 * process's one thread at a million pets, while every tenant's requests waited.
 */
export function searchStreamStatement(query: ListPetsQuery & { q: string }): Statement {
  const { values, param, list } = placeholders('sqlite')
  const descending = query.sort === '-id'
  // Values go in the order of their placeholders in the text.
  const passes = columnFilters(query, list).join(' AND ')
  const match = `pets_search MATCH ${param(searchForms(query.q).map(ftsPhrase).join(' OR '))}`
  const bound = query.afterId > 0 ? ` AND pets_search.rowid ${descending ? '<' : '>'} ${param(query.afterId)}` : ''
  const filters = columnFilters(query, list).join(' AND ')
  const text = `SELECT p.id, p.name, p.category_id, p.status, (${passes}) FROM pets_search JOIN pets p ON p.id = pets_search.rowid WHERE ${match}${bound} AND ((${filters}) OR ${STREAM_TICK}()) ORDER BY pets_search.rowid${descending ? ' DESC' : ''}`
  return { text, values }
}

/**
 * `sort=name` with a status or category filter, on SQLite, as a stream of the pets
 * after the cursor in name order (`pets_name`), each with whether it passes the filters
 * (the last column), those that fail coming back only at STREAM_TICK's ticks: for a
 * filter common among the pets but not among the next names (1,000 pets whose names
 * sort first, which any key can make, sent every first page of
 * `status=available&sort=name` to the sort of a third of the pets: 0.2-0.5 s of the
 * process's one thread, at a million).
 */
export function nameWalkStreamStatement(query: ListPetsQuery): Statement {
  const { values, param, list } = placeholders('sqlite')
  // Values go in the order of their placeholders in the text.
  const passes = columnFilters(query, list).join(' AND ')
  const after = query.afterId > 0 ? `(p.name, p.id) > (${param(query.afterName ?? '')}, ${param(query.afterId)}) AND ` : ''
  const filters = columnFilters(query, list).join(' AND ')
  return { text: `SELECT ${PET_COLUMNS}, (${passes}) FROM pets p WHERE ${after}((${filters}) OR ${STREAM_TICK}()) ORDER BY p.name, p.id`, values }
}

/** Whether the filter of a `sort=name` list matches at most `atMost` pets: then sorting them all is cheap. */
export function matchesAtMostStatement(query: ListPetsQuery, atMost: number): Statement {
  const { values, param, list } = placeholders('sqlite')
  // In the order of the placeholders in the text.
  const most = param(atMost)
  const where = columnFilters(query, list).join(' AND ')
  return { text: `SELECT count(*) <= ${most} FROM (SELECT 1 FROM pets p WHERE ${where} LIMIT ${param(atMost + 1)})`, values }
}

/**
 * `sort=name` with a status or category filter, on SQLite, read by walking `pets_name`.
 * SQLite's planner reads the filter's index instead and sorts every match by name: for
 * one status a third of the pets, 0.2-0.4 s at 1,000,000 pets for a page of 20, which
 * any key could ask again and again with another cursor. Walking the names in order and
 * filtering stops at the page's end when matches are common, and reads at most `window`
 * pets when they are not:
 * - `page`: the page's matches among the `window` pets after the cursor, in name order;
 * - `walked`: how many pets that walk passed (from `pets_name` alone). Fewer than
 *   `window` means it reached the last pet, so the page holds every match there is.
 * A short page from a full walk means the filter is rare among the next `window` names;
 * the store then sorts its matches (filteredListStatement), few when the filter is
 * rare. Undefined for a query the plain statement already reads in order: without
 * these filters, or with q or ids, which lead.
 */
export function nameWalkStatements(query: ListPetsQuery, window: number): { page: Statement; walked: Statement } | undefined {
  if (query.sort !== 'name' || query.q !== undefined || query.ids !== undefined) return undefined
  if (!query.statuses?.length && query.categoryIds === undefined) return undefined
  const after = (param: (value: unknown) => string) =>
    query.afterId > 0 ? ` WHERE (p.name, p.id) > (${param(query.afterName ?? '')}, ${param(query.afterId)})` : ''
  const walk = placeholders('sqlite')
  const inWindow = `SELECT ${PET_COLUMNS} FROM pets p${after(walk.param)} ORDER BY p.name, p.id LIMIT ${walk.param(window)}`
  const filters = columnFilters(query, walk.list)
  const page = `SELECT ${PET_COLUMNS} FROM (${inWindow}) p WHERE ${filters.join(' AND ')} ORDER BY p.name, p.id LIMIT ${walk.param(query.limit)}`
  const count = placeholders('sqlite')
  const walked = `SELECT count(*) FROM (SELECT 1 FROM pets p${after(count.param)} ORDER BY p.name, p.id LIMIT ${count.param(window)})`
  return { page: { text: page, values: walk.values }, walked: { text: walked, values: count.values } }
}

/** The dialect's placeholders for values pushed in order, and a list of them as one parameter. */
function placeholders(dialect: Dialect) {
  const values: unknown[] = []
  const param = (value: unknown, cast = '') => {
    values.push(value)
    return dialect === 'sqlite' ? '?' : `$${values.length}${cast}`
  }
  // One value is an equality, not a list of one: SQLite then reads the (column, id)
  // index in id order and stops at the page's end, where with IN (json_each) it put
  // the value's rows through a sorter (at 1,000,000 pets, 2.3–2.8× the plain list's
  // read; now 1.3×).
  const list = (items: readonly unknown[], cast: string) => {
    if (items.length === 1) return `= ${param(items[0], cast.replace('[]', ''))}`
    return dialect === 'sqlite' ? `IN (SELECT value FROM json_each(${param(JSON.stringify(items))}))` : `= ANY(${param(items, cast)})`
  }
  return { values, param, list }
}

/** The conditions of `status`, `categoryId` and `ids`, in that order. */
function columnFilters(query: ListPetsQuery, list: (items: readonly unknown[], cast: string) => string): string[] {
  const where: string[] = []
  if (query.statuses !== undefined && query.statuses.length > 0) where.push(`p.status ${list(query.statuses, '::text[]')}`)
  if (query.categoryIds !== undefined) where.push(`p.category_id ${list(query.categoryIds, '::bigint[]')}`)
  if (query.ids !== undefined) where.push(`p.id ${list(query.ids, '::bigint[]')}`)
  return where
}

/** A filtered list's identity, for the stores' per-turn and per-version page caches. */
export const filteredKey = (query: ListPetsQuery): string =>
  JSON.stringify([query.statuses, query.categoryIds, query.q, query.ids, query.sort, query.afterId, query.afterName, query.limit])

/** The forms of `q` looked for: composed (NFC) and decomposed (NFD), or one when they read alike (see filteredListStatement). */
function searchForms(q: string): string[] {
  const composed = q.normalize('NFC')
  const decomposed = q.normalize('NFD')
  return composed === decomposed || [...composed].length < 3 ? [decomposed] : [composed, decomposed]
}

/** FTS5: the text as one phrase (a substring, with the trigram tokenizer), quotes doubled. */
const ftsPhrase = (text: string) => `"${text.replaceAll('"', '""')}"`
/** LIKE: the text matched literally (PostgreSQL's default escape is the backslash). */
const likeEscaped = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/**
 * PostgreSQL: the creates of one batch in one statement (one transaction, one
 * commit), however many there are: the columns as four arrays, so that it is one
 * prepared statement for every batch size. Rows are inserted, given their ids and
 * returned in the arrays' order (ORDER BY the ordinality), so ids increase in that
 * order. A pet whose category does not exist is left out (and the foreign key would
 * refuse it): every pet of a missing category is, so the rows returned are the pets
 * given whose category exists, in order (postgres/pets-store.ts matches them so).
 */
export const POSTGRES_INSERT_MANY = `INSERT INTO pets (name, category_id, status, created_at)
  SELECT name, category_id, status, created_at
  FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[]) WITH ORDINALITY AS batch (name, category_id, status, created_at, n)
  WHERE EXISTS (SELECT 1 FROM categories c WHERE c.id = batch.category_id)
  ORDER BY n
  RETURNING ${PET_COLUMNS}`

/** A pet with `changes` applied, and whether that changes its status. */
export function changed(current: Pet, changes: PetChanges): { pet: Pet; statusChanges: boolean } {
  const pet: Pet = { id: current.id, name: changes.name ?? current.name, categoryId: changes.categoryId ?? current.categoryId, status: changes.status ?? current.status }
  return { pet, statusChanges: pet.status !== current.status }
}

/** Maps a pets row to the API's Pet: the one place that does. */
export function toPet(row: Pick<Selectable<PetsTable>, 'id' | 'name' | 'category_id' | 'status'>): Pet {
  return { id: row.id, name: row.name, categoryId: row.category_id, status: row.status as PetStatus }
}

/** Raw rows (arrays) are cheaper to build than objects; mapped by position. */
export type PetRow = [id: number, name: string, categoryId: number, status: string]
export const rowToPet = ([id, name, categoryId, status]: PetRow): Pet => ({ id, name, categoryId, status: status as PetStatus })

export type { Inventory } from '../../schemas/order.js'

/** The inventory from countByStatus rows; a status without pets counts 0. */
export function toInventory(rows: readonly { status: string; count: number | string | bigint }[]): Inventory {
  const inventory: Inventory = { available: 0, pending: 0, sold: 0 }
  for (const { status, count } of rows) if (status in inventory) inventory[status as PetStatus] = Number(count)
  return inventory
}
