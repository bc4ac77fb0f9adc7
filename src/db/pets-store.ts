// The pets store: what the rest of the service may do with pets. One implementation
// per database (sqlite/pets-store.ts, postgres/pets-store.ts), each fast in its own
// way behind this interface; the SQL of both is in sql/pets-sql.ts.
import type { Inventory } from '../schemas/order.js'
import type { NewPet, Pet, PetStatus } from '../schemas/pet.js'
import type { Completion } from './idempotency-store.js'

export interface ListPetsQuery {
  status?: PetStatus | undefined
  /** Only pets with a larger id (keyset pagination). */
  afterId: number
  limit: number
}

/** A page of pets, and whether the store hands this very object to other callers too. */
export interface PetsPage {
  /** In ascending id order. Never to be changed: the page may be shared. */
  pets: readonly Pet[]
  /**
   * True when the store hands this same page object to several callers (SQLite: every
   * caller until the next commit; PostgreSQL: the callers of one event-loop turn).
   * What a caller derives from it (the JSON of the answer) is worth keeping by the
   * page's identity (a WeakMap), and goes with it.
   */
  shared: boolean
}

export interface PetsStore {
  /** Pets in ascending id order; cost depends on the page size, not the table's size. Never older than a commit the caller could have known about. */
  list(query: ListPetsQuery): Promise<PetsPage>
  find(id: number): Promise<Pet | undefined>
  /**
   * Adds a pet; resolves once it is committed durably. With `completion`, the pet is
   * also stored as the Idempotency-Key's response, in the same transaction.
   */
  insert(pet: NewPet, now: number, completion?: Completion): Promise<Pet>
  /** Exact counts per status. */
  inventory(): Promise<Inventory>
}
