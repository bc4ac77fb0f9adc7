// The pets store: what the rest of the service may do with pets. One implementation
// per database (sqlite/pets-store.ts, postgres/pets-store.ts), each fast in its own
// way behind this interface; the SQL of both is in sql/pets-sql.ts.
import type { Inventory } from '../schemas/order.js'
import type { NewPet, Pet, PetSort, PetStatus } from '../schemas/pet.js'
import type { Completion } from './idempotency-store.js'

export interface ListPetsQuery {
  /** Only pets with one of these statuses (none given: any). */
  statuses?: readonly PetStatus[] | undefined
  /** Only pets of one of these categories. */
  categoryIds?: readonly number[] | undefined
  /** Only pets whose name contains this text, case-insensitively (3 characters at least: the indexes are of trigrams). */
  q?: string | undefined
  /** Only these pets. */
  ids?: readonly number[] | undefined
  /** `id` (the default), `-id`, or `name` (then id; names compared by code point). */
  sort?: PetSort | undefined
  /**
   * Keyset pagination: only pets after this one in the sort order; 0 from the start.
   * With `name`, its name is `afterName`.
   */
  afterId: number
  afterName?: string | undefined
  limit: number
}

/** Whether `query` is the plain list or one status's, in id order: what the stores serve fastest. */
export const isPlainList = (query: ListPetsQuery): boolean =>
  (query.sort ?? 'id') === 'id' && query.categoryIds === undefined && query.q === undefined && query.ids === undefined && (query.statuses?.length ?? 0) <= 1

/** A page of pets, and whether the store hands this very object to other callers too. */
export interface PetsPage {
  /** In the order asked for. Never to be changed: the page may be shared. */
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

/** A create's outcome; a refusal wrote nothing. */
export type InsertResult = { outcome: 'created'; pet: Pet } | { outcome: 'no_such_category' }

/** An update's or a removal's outcome; a refusal wrote nothing. */
export type ChangeResult<T> =
  | T
  | { outcome: 'no_such_pet' }
  /** The change names a category that does not exist. */
  | { outcome: 'no_such_category' }
  /** An open (`placed`) order holds the pet: its status cannot change, nor can it go. `accountId`: the order's. */
  | { outcome: 'pet_in_order'; orderId: number; accountId: number }
  | { outcome: 'precondition_failed'; current: Pet }

export interface PetsStore {
  /**
   * Pets matching every filter given, in the order asked; for the plain list and the
   * filters by status, category and id, cost depends on the page size, not the table's
   * size (indexes of migration 2026-11-25-010); `q` costs with the pets whose names hold
   * its trigrams. Never older than a commit the caller could have known about.
   */
  list(query: ListPetsQuery): Promise<PetsPage>
  find(id: number): Promise<Pet | undefined>
  /**
   * Adds a pet whose category exists; resolves once it is committed durably. With
   * `completion`, the pet is also stored as the Idempotency-Key's response, in the
   * same transaction (a refusal stores nothing).
   */
  insert(pet: NewPet, now: number, completion?: Completion): Promise<InsertResult>
  /**
   * Changes a pet's fields, in one transaction with the pet locked: of a status change
   * and a reservation racing for one pet, on any number of instances, one happens
   * first and the other sees it. A status change is refused while an open order holds
   * the pet (so is none: setting the status it has is no change), and so is a
   * category that does not exist.
   */
  update(id: number, changes: PetChanges, precondition?: PetPrecondition): Promise<ChangeResult<{ outcome: 'updated'; pet: Pet }>>
  /** Deletes a pet that no open order holds; its closed orders keep its id. */
  remove(id: number, precondition?: PetPrecondition): Promise<ChangeResult<{ outcome: 'removed' }>>
  /** Exact counts per status. */
  inventory(): Promise<Inventory>
}
