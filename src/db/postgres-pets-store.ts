// The pets store on PostgreSQL: named (prepared) statements on the pool, and reads
// coalesced per event-loop turn (read-coalescer.ts). No cache: other instances write
// the same database, and nothing here would learn of it.
import type pg from 'pg'
import { createReadCoalescer } from './read-coalescer.js'
import { findPet, insertPet, PET_COLUMNS, petsStatements, toInventory, toPet, transitionPet } from './pets-sql.js'
import type { PetsTable } from './schema.js'
import type { PetsStore } from './pets-store.js'
import type { Selectable } from 'kysely'

type PetRecord = Pick<Selectable<PetsTable>, 'id' | 'name' | 'category_id' | 'status'>

const SQL = petsStatements((n) => `$${n}`)
// Statement names are per connection; the prefix keeps them apart from anyone else's.
const LIST_ALL = { name: 'petstore_pets_list', text: SQL.listAll }
const LIST_BY_STATUS = { name: 'petstore_pets_list_by_status', text: SQL.listByStatus }
const BY_ID = { name: 'petstore_pets_by_id', text: SQL.byId }
const INSERT = { name: 'petstore_pets_insert', text: `${SQL.insert} RETURNING ${PET_COLUMNS}` }

export function createPostgresPetsStore(pool: pg.Pool): PetsStore {
  const read = createReadCoalescer<PetRecord[]>()
  const rows = async (query: pg.QueryConfig) => (await pool.query<PetRecord>(query)).rows

  return {
    async list({ status, afterId, limit }) {
      const page = await read(`list:${status ?? ''}:${afterId}:${limit}`, () =>
        status ? rows({ ...LIST_BY_STATUS, values: [status, afterId, limit] }) : rows({ ...LIST_ALL, values: [afterId, limit] }),
      )
      // New objects for each caller: coalesced callers share the rows, not the pets.
      return { pets: page.map(toPet), shared: false }
    },

    async find(id) {
      const [row] = await read(`id:${id}`, () => rows({ ...BY_ID, values: [id] }))
      return row && toPet(row)
    },

    async insert(pet, now) {
      const [row] = await rows({ ...INSERT, values: [pet.name, pet.categoryId, pet.status ?? 'available', now] })
      return toPet(row!)
    },

    insertIn: insertPet,
    transition: transitionPet,
    findIn: findPet,
    async inventory() {
      return toInventory((await pool.query<{ status: string; count: string }>(SQL.countByStatus)).rows)
    },
    close() {},
  }
}
