import type { Kysely, Selectable } from 'kysely'
import type { Database, PetsTable } from './schema.js'
import type { NewPet, Pet, PetStatus } from '../schemas/pet.js'

export interface ListPetsQuery {
  status?: PetStatus | undefined
  /** Only pets with a larger id (keyset pagination). */
  afterId: number
  limit: number
}

export type PetRepository = ReturnType<typeof createPetRepository>

export function createPetRepository(db: Kysely<Database>) {
  return {
    /**
     * Pets in ascending id order; cost depends on the page size, not the table's size.
     * Readonly: a store may hand the same page to many callers (a frozen array then).
     */
    async list({ status, afterId, limit }: ListPetsQuery): Promise<readonly Pet[]> {
      let query = db.selectFrom('pets').select(['id', 'name', 'category_id', 'status']).where('id', '>', afterId)
      if (status) query = query.where('status', '=', status)
      const rows = await query.orderBy('id').limit(limit).execute()
      return rows.map(toPet)
    },

    async insert(pet: NewPet, now: number): Promise<Pet> {
      const row = await db
        .insertInto('pets')
        .values({ name: pet.name, category_id: pet.categoryId, status: pet.status ?? 'available', created_at: now })
        .returning(['id', 'name', 'category_id', 'status'])
        .executeTakeFirstOrThrow()
      return toPet(row)
    },

    async findById(id: number): Promise<Pet | undefined> {
      const row = await db
        .selectFrom('pets')
        .select(['id', 'name', 'category_id', 'status'])
        .where('id', '=', id)
        .executeTakeFirst()
      return row && toPet(row)
    },
  }
}

/** The columns a Pet is read from, in the order the hot-path repositories' raw rows use. */
export const PET_COLUMNS = 'id, name, category_id, status'

/** Maps a pets row to the API's Pet: the one place that does (raw array rows aside). */
export function toPet(row: Pick<Selectable<PetsTable>, 'id' | 'name' | 'category_id' | 'status'>): Pet {
  return { id: row.id, name: row.name, categoryId: row.category_id, status: row.status as PetStatus }
}
