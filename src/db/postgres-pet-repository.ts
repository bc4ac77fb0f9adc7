// The pet repository of the PostgreSQL store, for the hot path: the same contract
// as createPetRepository (list, insert, findById), as named prepared statements on
// the pool. Each connection parses and plans a statement once, on its first use,
// instead of on every query, and no query is built per request. Nothing is cached
// in this process: other instances write to the same database, and nothing here
// could tell when they did. Identical reads of one event-loop turn share one query
// (read-coalescer.ts), which is as fresh as a query per request. createPetRepository
// stays the way to work on pets inside a Kysely transaction.
import type pg from 'pg'
import { createReadCoalescer } from './read-coalescer.js'
import type { Selectable } from 'kysely'
import { PET_COLUMNS, toPet, type ListPetsQuery, type PetRepository } from './pet-repository.js'
import type { PetsTable } from './schema.js'
import type { NewPet, Pet } from '../schemas/pet.js'

type PetRow = Pick<Selectable<PetsTable>, 'id' | 'name' | 'category_id' | 'status'>

// Statement names are per connection; the prefix keeps them apart from anyone else's.
const LIST_ALL = { name: 'petstore_pets_list', text: `SELECT ${PET_COLUMNS} FROM pets WHERE id > $1 ORDER BY id LIMIT $2` }
const LIST_BY_STATUS = {
  name: 'petstore_pets_list_by_status',
  text: `SELECT ${PET_COLUMNS} FROM pets WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`,
}
const BY_ID = { name: 'petstore_pets_by_id', text: `SELECT ${PET_COLUMNS} FROM pets WHERE id = $1` }
const INSERT = {
  name: 'petstore_pets_insert',
  text: `INSERT INTO pets (name, category_id, status, created_at) VALUES ($1, $2, $3, $4) RETURNING ${PET_COLUMNS}`,
}

export function createPostgresPetRepository(pool: pg.Pool): PetRepository {
  const read = createReadCoalescer<PetRow[]>()
  const rows = async (query: pg.QueryConfig) => (await pool.query<PetRow>(query)).rows

  return {
    /** Pets in ascending id order; cost depends on the page size, not the table's size. */
    async list({ status, afterId, limit }: ListPetsQuery): Promise<readonly Pet[]> {
      const page = await read(`list:${status ?? ''}:${afterId}:${limit}`, () =>
        status ? rows({ ...LIST_BY_STATUS, values: [status, afterId, limit] }) : rows({ ...LIST_ALL, values: [afterId, limit] }),
      )
      // New objects for each caller: coalesced callers share the rows, not the pets.
      return page.map(toPet)
    },

    async insert(pet: NewPet, now: number): Promise<Pet> {
      const [row] = await rows({ ...INSERT, values: [pet.name, pet.categoryId, pet.status ?? 'available', now] })
      return toPet(row!)
    },

    async findById(id: number): Promise<Pet | undefined> {
      const [row] = await read(`id:${id}`, () => rows({ ...BY_ID, values: [id] }))
      return row && toPet(row)
    },
  }
}
