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

/** Fields to change on a pet: any of a Pet's own, at least one. */
export type PetChanges = Partial<Pick<Pet, 'name' | 'categoryId' | 'status'>>

/**
 * A condition on the pet as the write finds it, checked in the write's own
 * transaction with the pet locked (an `If-Match` with the pet's ETag): when it does
 * not hold, nothing is written.
 */
export type PetPrecondition = (current: Pet) => boolean

/** An update's or a removal's outcome; a refusal wrote nothing. */
export type ChangeResult<T> =
  | T
  | { outcome: 'no_such_pet' }
  /** An open (`placed`) order holds the pet: its status cannot change, nor can it go. `accountId`: the order's. */
  | { outcome: 'pet_in_order'; orderId: number; accountId: number }
  | { outcome: 'precondition_failed'; current: Pet }

export interface PetsStore {
  /** Pets in ascending id order; cost depends on the page size, not the table's size. Never older than a commit the caller could have known about. */
  list(query: ListPetsQuery): Promise<PetsPage>
  find(id: number): Promise<Pet | undefined>
  /**
   * Adds a pet; resolves once it is committed durably. With `completion`, the pet is
   * also stored as the Idempotency-Key's response, in the same transaction.
   */
  insert(pet: NewPet, now: number, completion?: Completion): Promise<Pet>
  /**
   * Changes a pet's fields, in one transaction with the pet locked: of a status change
   * and a reservation racing for one pet, on any number of instances, one happens
   * first and the other sees it. A status change is refused while an open order holds
   * the pet (so is none: setting the status it has is no change).
   */
  update(id: number, changes: PetChanges, precondition?: PetPrecondition): Promise<ChangeResult<{ outcome: 'updated'; pet: Pet }>>
  /** Deletes a pet that no open order holds; its closed orders keep its id. */
  remove(id: number, precondition?: PetPrecondition): Promise<ChangeResult<{ outcome: 'removed' }>>
  /** Exact counts per status. */
  inventory(): Promise<Inventory>
}
