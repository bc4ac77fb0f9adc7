// Every statement on the pets table, in one place: the stores of both databases
// (sqlite/pets-store.ts, postgres/pets-store.ts) prepare these texts.
import type { Selectable } from 'kysely'
import type { PetChanges } from '../pets-store.js'
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
    /** The open order that holds a pet, if any (orders_one_open_per_pet: at most one). */
    openOrderOf: `SELECT id, account_id AS "accountId" FROM orders WHERE pet_id = ${param(1)} AND status = 'placed'`,
    /**
     * Exact counts per status, kept by triggers on pets (migrations/2026-11-24-004):
     * at most a few hundred rows, whatever the number of pets.
     */
    countByStatus: 'SELECT status, sum(n) AS count FROM pet_status_counts GROUP BY status',
  }
}

/**
 * PostgreSQL: the creates of one batch in one statement (one transaction, one
 * commit), however many there are: the columns as four arrays, so that it is one
 * prepared statement for every batch size. Rows are inserted, given their ids and
 * returned in the arrays' order (ORDER BY the ordinality), so the i-th row returned is
 * the i-th pet given, and ids increase in that order.
 */
export const POSTGRES_INSERT_MANY = `INSERT INTO pets (name, category_id, status, created_at)
  SELECT name, category_id, status, created_at
  FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[]) WITH ORDINALITY AS batch (name, category_id, status, created_at, n)
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
