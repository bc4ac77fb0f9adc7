// The pet repository of the PostgreSQL store, for the hot path: the same contract
// as createPetRepository (list, insert, findById), as named prepared statements on
// the pool. Each connection parses and plans a statement once, on its first use,
// instead of on every query, and no query is built per request. Nothing is cached
// in this process: other instances write to the same database, and nothing here
// could tell when they did. createPetRepository stays the way to work on pets
// inside a Kysely transaction.
import type pg from 'pg'
import type { ListPetsQuery, PetRepository } from './pet-repository.js'
import type { NewPet, Pet, PetStatus } from '../schemas/pet.js'

interface PetRow {
  id: number
  name: string
  category_id: number
  status: string
}

const COLUMNS = 'id, name, category_id, status'

// Statement names are per connection; the prefix keeps them apart from anyone else's.
const LIST_ALL = { name: 'petstore_pets_list', text: `SELECT ${COLUMNS} FROM pets WHERE id > $1 ORDER BY id LIMIT $2` }
const LIST_BY_STATUS = {
  name: 'petstore_pets_list_by_status',
  text: `SELECT ${COLUMNS} FROM pets WHERE status = $1 AND id > $2 ORDER BY id LIMIT $3`,
}
const BY_ID = { name: 'petstore_pets_by_id', text: `SELECT ${COLUMNS} FROM pets WHERE id = $1` }
const INSERT = {
  name: 'petstore_pets_insert',
  text: `INSERT INTO pets (name, category_id, status, created_at) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
}

export function createPostgresPetRepository(pool: pg.Pool): PetRepository {
  return {
    /** Pets in ascending id order; cost depends on the page size, not the table's size. */
    async list({ status, afterId, limit }: ListPetsQuery): Promise<Pet[]> {
      const { rows } = status
        ? await pool.query<PetRow>({ ...LIST_BY_STATUS, values: [status, afterId, limit] })
        : await pool.query<PetRow>({ ...LIST_ALL, values: [afterId, limit] })
      return rows.map(toPet)
    },

    async insert(pet: NewPet, now: number): Promise<Pet> {
      const { rows } = await pool.query<PetRow>({ ...INSERT, values: [pet.name, pet.categoryId, pet.status ?? 'available', now] })
      return toPet(rows[0]!)
    },

    async findById(id: number): Promise<Pet | undefined> {
      const { rows } = await pool.query<PetRow>({ ...BY_ID, values: [id] })
      return rows[0] && toPet(rows[0])
    },
  }
}

function toPet(row: PetRow): Pet {
  return { id: row.id, name: row.name, categoryId: row.category_id, status: row.status as PetStatus }
}
