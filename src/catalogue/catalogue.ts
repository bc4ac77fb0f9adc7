// The catalogue: the animals and the categories they belong to, as the pet and
// category routes use them. The one service under routes/v1/pets.ts and
// categories.ts, as key-admin.ts is under the keys routes.
//
// Pets and categories belong to no account: every key with the scope sees and changes
// the same ones. The rules (a pet's category exists, a category with pets cannot go,
// names unique case-insensitively, If-Match against the current version) are the
// store's conditional writes, on any number of instances; this service passes on its
// typed outcomes and adds the time. A page of the list may be shared between requests
// and come back without a promise (db/pets-store.ts): it is passed on as it comes.
import type { Clock } from '../clock.js'
import type { CategoriesStore, CategoryRemoveResult, CategoryWriteResult } from '../db/categories-store.js'
import type { Completion } from '../db/idempotency-store.js'
import type { ChangeResult, InsertResult, ListPetsQuery, PetChanges, PetPrecondition, PetsPage, PetsStore } from '../db/pets-store.js'
import type { Category, CategoryPatch, NewCategory } from '../schemas/category.js'
import type { NewPet, Pet } from '../schemas/pet.js'

export type { CategoryWriteResult, ChangeResult, InsertResult }

export interface CatalogueOptions {
  pets: Omit<PetsStore, 'inventory'>
  categories: CategoriesStore
  clock: Clock
  /** Categories the service keeps (PETSTORE_MAX_CATEGORIES): one more is `limit_reached`. */
  maxCategories?: number
}

export function createCatalogue({ pets, categories, clock, maxCategories }: CatalogueOptions) {
  return {
    pets: {
      list: (query: ListPetsQuery): Promise<PetsPage> => pets.list(query),
      find: (id: number): Promise<Pet | undefined> => pets.find(id),
      /** With `completion`, the created pet is also the Idempotency-Key's answer, in the same transaction. */
      add: (pet: NewPet, completion?: Completion): Promise<InsertResult> => pets.insert(pet, clock.now(), completion),
      change: (id: number, changes: PetChanges, precondition?: PetPrecondition) => pets.update(id, changes, precondition),
      remove: (id: number, precondition?: PetPrecondition) => pets.remove(id, precondition),
    },
    categories: {
      list: (query: { afterId: number; limit: number }): Promise<Category[]> => categories.list(query),
      find: (id: number): Promise<Category | undefined> => categories.find(id),
      /** With `completion`, the created category is also the Idempotency-Key's answer, in the same transaction. */
      add: (category: NewCategory, completion?: Completion) => categories.insert(category, clock.now(), completion, maxCategories),
      change: (id: number, changes: CategoryPatch) => categories.update(id, changes),
      remove: (id: number): Promise<CategoryRemoveResult> => categories.remove(id),
    },
  }
}

export type Catalogue = ReturnType<typeof createCatalogue>
