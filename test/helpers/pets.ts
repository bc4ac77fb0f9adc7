// Adding pets straight in the store, for tests that need some: the pet, or the test fails.
import type { Completion } from '../../src/db/idempotency-store.js'
import type { PetsStore } from '../../src/db/pets-store.js'
import type { NewPet, Pet } from '../../src/schemas/pet.js'

/** Inserts `pet`; rejects when the store refuses it (a category that does not exist). */
export async function insertPet(pets: PetsStore, pet: NewPet, now: number, completion?: Completion): Promise<Pet> {
  const result = await pets.insert(pet, now, completion)
  if (result.outcome !== 'created') throw new Error(`the store refused the pet: ${result.outcome}`)
  return result.pet
}
