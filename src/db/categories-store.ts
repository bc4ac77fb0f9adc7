// The categories store: the kinds of animal a pet's categoryId names. Written once
// for both databases (sql/categories.ts); that a pet names an existing category, and
// that a category with pets cannot go, is held by the database itself (a foreign key
// on PostgreSQL, triggers on SQLite: migration 2026-11-25-010).
import type { Category, CategoryPatch, NewCategory } from '../schemas/category.js'
import type { Completion } from './idempotency-store.js'

export interface ListCategoriesQuery {
  /** Only categories with a larger id (keyset pagination). */
  afterId: number
  limit: number
}

/** A create's or an update's outcome; a refusal wrote nothing. */
export type CategoryWriteResult =
  | { outcome: 'written'; category: Category }
  | { outcome: 'no_such_category' }
  /** Another category has this name, as people read it (vocabulary/category-names.ts). */
  | { outcome: 'name_taken'; categoryId: number }
  /** A create: there are as many categories as the service keeps (PETSTORE_MAX_CATEGORIES). */
  | { outcome: 'limit_reached'; limit: number }

export type CategoryRemoveResult =
  | { outcome: 'removed' }
  | { outcome: 'no_such_category' }
  /** Pets name it: they must move to another category, or go, first. */
  | { outcome: 'category_in_use' }

export interface CategoriesStore {
  /** In ascending id order. */
  list(query: ListCategoriesQuery): Promise<Category[]>
  find(id: number): Promise<Category | undefined>
  /**
   * With `completion`, the category is also stored as the Idempotency-Key's response, in the same transaction (ClaimLostError if it was taken over: nothing inserted).
   * `limit_reached`, and nothing written, when `limit` categories exist (counted under a lock: concurrent inserts cannot pass it).
   */
  insert(category: NewCategory, now: number, completion?: Completion, limit?: number): Promise<Exclude<CategoryWriteResult, { outcome: 'no_such_category' }>>
  update(id: number, changes: CategoryPatch): Promise<Exclude<CategoryWriteResult, { outcome: 'limit_reached' }>>
  remove(id: number): Promise<CategoryRemoveResult>
}
