// The pets store on PostgreSQL: named (prepared) statements on the pool; reads
// coalesced per event-loop turn (read-coalescer.ts), and the creates of a turn in one
// multi-row INSERT (turn-batcher.ts), committed before any of them is answered. No
// cache across turns: other instances write the same database, and nothing here
// would learn of it in time (bench/results.md, fifth pass). A create with an
// Idempotency-Key runs the same INSERT for its one pet in a transaction of its own,
// with the response it stores.
import type pg from 'pg'
import type { Selectable } from 'kysely'
import { createReadCoalescer } from '../batching/read-coalescer.js'
import { createTurnBatcher } from '../batching/turn-batcher.js'
import { isPlainList, type ChangeResult, type InsertResult, type ListPetsQuery, type PetPrecondition, type PetsPage, type PetsStore } from '../pets-store.js'
import type { PetsTable } from '../schema.js'
import { isNoSuchCategory } from '../sql/categories.js'
import { changed, filteredKey, filteredListStatement, petsStatements, POSTGRES_INSERT_MANY, toInventory, toPet, type Inventory } from '../sql/pets-sql.js'
import { completeClaim } from './idempotency.js'
import { inTransaction } from './transaction.js'
import { createGate } from '../gate.js'
import type { NewPet, Pet } from '../../schemas/pet.js'

type PetRecord = Pick<Selectable<PetsTable>, 'id' | 'name' | 'category_id' | 'status'>

const SQL = petsStatements((n) => `$${n}`)
// Statement names are per connection; the prefix keeps them apart from anyone else's.
const LIST_ALL = { name: 'petstore_pets_list', text: SQL.listAll }
const LIST_BY_STATUS = { name: 'petstore_pets_list_by_status', text: SQL.listByStatus }
const BY_ID = { name: 'petstore_pets_by_id', text: SQL.byId }
const INSERT_MANY = { name: 'petstore_pets_insert_many', text: POSTGRES_INSERT_MANY }
const COUNT_BY_STATUS = { name: 'petstore_pets_count_by_status', text: SQL.countByStatus }
// FOR UPDATE: the pet stays as read until the change commits; a reservation of it
// (orders-store.ts locks the same row first) waits, or is waited for.
const LOCK_BY_ID = { name: 'petstore_pets_lock_by_id', text: `${SQL.byId} FOR UPDATE` }
const OPEN_ORDER_OF = { name: 'petstore_pets_open_order_of', text: SQL.openOrderOf }
const UPDATE = { name: 'petstore_pets_update', text: SQL.update }
const REMOVE = { name: 'petstore_pets_remove', text: SQL.remove }

/**
 * Searches that may hold a connection of the pool (4) at once, and that may wait for
 * one; beyond, a search is answered 503 at once. A pattern with no trigram to look up
 * (`---`), or only common ones, reads the whole table: without this, four such searches
 * took every connection and every tenant's requests waited or failed.
 */
const SEARCHES_AT_ONCE = 2
const SEARCHES_WAITING = 16
/** Well within the request deadline (7 s): a search not started by then is refused, not run for a caller already answered. */
const SEARCH_MAX_WAIT_MS = 3_000

export function createPostgresPetsStore(pool: pg.Pool): PetsStore {
  const rows = async (query: pg.QueryConfig) => (await pool.query<PetRecord>(query)).rows
  // A turn's callers of one list query share one page object, so the route serializes it once (routes/v1/list-page-answer.ts).
  const pageOfTurn = createReadCoalescer<PetsPage>()
  const listPage = async (query: pg.QueryConfig): Promise<PetsPage> =>
    Object.freeze({ pets: Object.freeze((await rows(query)).map((row) => Object.freeze(toPet(row)))), shared: true })
  // Named, so that each connection prepares a filtered list's statement once: a handful
  // of texts (sql/pets-sql.ts). Not a search's: after five runs PostgreSQL may keep one
  // generic plan for a named statement, and for `ILIKE $1` that is a walk of the whole
  // table by id; a tenant's few searches for "+++" made every later search on that
  // connection cost a full scan. Unnamed, each search is planned for its own pattern.
  const statementNames = new Map<string, string>()
  const filteredStatement = (query: ListPetsQuery): pg.QueryConfig => {
    const { text, values } = filteredListStatement('postgres', query)
    if (query.q !== undefined) return { text, values }
    let name = statementNames.get(text)
    if (name === undefined) statementNames.set(text, (name = `petstore_pets_filtered_${statementNames.size + 1}`))
    return { name, text, values }
  }
  const searching = createGate({ permits: SEARCHES_AT_ONCE, queue: SEARCHES_WAITING, maxWaitMs: SEARCH_MAX_WAIT_MS, what: 'searches' })
  const rowOfTurn = createReadCoalescer<PetRecord[]>()
  const countsOfTurn = createReadCoalescer<Inventory>()
  const readCounts = async () => toInventory((await pool.query<{ status: string; count: string }>(COUNT_BY_STATUS)).rows)

  const insertMany = (pets: readonly NewPet[], now: readonly number[]): pg.QueryConfig => ({
    ...INSERT_MANY,
    values: [pets.map((p) => p.name), pets.map((p) => p.categoryId), pets.map((p) => p.status ?? 'available'), now],
  })
  const insertBatch = createTurnBatcher<{ pet: NewPet; now: number }, InsertResult>(
    async (batch) => {
      const statement = insertMany(batch.map(({ input }) => input.pet), batch.map(({ input }) => input.now))
      // A category deleted between the statement's check and its foreign key's refuses
      // the whole statement; run again, the check sees it gone.
      const inserted = await rows(statement).catch((error: unknown) => (isNoSuchCategory(error) ? rows(statement) : Promise.reject(error)))
      // The rows returned are the pets whose category exists, in the batch's order
      // (sql/pets-sql.ts): a pet is the next row when the row is of its category.
      const results = matchInserted(batch.map(({ input }) => input.pet), inserted)
      // Committed (autocommit): now, and only now, may anyone hear back.
      batch.forEach((item, i) => item.resolve(results[i]!))
    },
    // One INSERT at a time, as SQLite's group commit: the creates arriving meanwhile
    // make the next one larger. Two or four at a time measured no better (bench/results.md, fifth pass).
  )

  /** In a transaction with the pet locked: the pet, or why `change` is refused; `change` runs only when nothing refuses it. */
  const changeLocked = <T>(id: number, precondition: PetPrecondition | undefined, statusChanges: (current: Pet) => boolean, change: (client: pg.PoolClient, current: Pet) => Promise<T>) =>
    inTransaction(pool, async (client): Promise<ChangeResult<T>> => {
      const [row] = (await client.query<PetRecord>({ ...LOCK_BY_ID, values: [id] })).rows
      if (!row) return { outcome: 'no_such_pet' }
      const current = toPet(row)
      if (precondition && !precondition(current)) return { outcome: 'precondition_failed', current }
      if (statusChanges(current)) {
        // A statement of its own, after the lock: READ COMMITTED sees an order committed while it waited.
        const [open] = (await client.query<{ id: number; accountId: number }>({ ...OPEN_ORDER_OF, values: [id] })).rows
        if (open) return { outcome: 'pet_in_order', orderId: open.id, accountId: open.accountId }
      }
      return change(client, current)
    })

  return {
    list(query) {
      if (query.q !== undefined) return pageOfTurn(filteredKey(query), () => searching(() => listPage(filteredStatement(query))))
      if (!isPlainList(query)) return pageOfTurn(filteredKey(query), () => listPage(filteredStatement(query)))
      const status = query.statuses?.[0]
      const { afterId, limit } = query
      return pageOfTurn(`${status ?? ''}:${afterId}:${limit}`, () =>
        status ? listPage({ ...LIST_BY_STATUS, values: [status, afterId, limit] }) : listPage({ ...LIST_ALL, values: [afterId, limit] }),
      )
    },

    async find(id) {
      const [row] = await rowOfTurn(`id:${id}`, () => rows({ ...BY_ID, values: [id] }))
      return row && toPet(row)
    },

    insert(pet, now, completion) {
      if (!completion) return insertBatch({ pet, now })
      return inTransaction(pool, async (client): Promise<InsertResult> => {
        const [row] = (await client.query<PetRecord>(insertMany([pet], [now]))).rows
        if (!row) return { outcome: 'no_such_category' }
        const created = toPet(row)
        await completeClaim(client, completion, created)
        return { outcome: 'created', pet: created }
      }).catch((error: unknown) => (isNoSuchCategory(error) ? { outcome: 'no_such_category' as const } : Promise.reject(error)))
    },
    update: (id, changes, precondition) =>
      changeLocked(id, precondition, (current) => changed(current, changes).statusChanges, async (client, current) => {
        const { pet } = changed(current, changes)
        // A category that does not exist: the foreign key refuses the update (rolled back), answered below.
        await client.query({ ...UPDATE, values: [pet.name, pet.categoryId, pet.status, id] })
        return { outcome: 'updated' as const, pet }
      }).catch((error: unknown) => (isNoSuchCategory(error) ? { outcome: 'no_such_category' as const } : Promise.reject(error))),

    remove: (id, precondition) =>
      changeLocked(id, precondition, () => true, async (client) => {
        await client.query({ ...REMOVE, values: [id] })
        return { outcome: 'removed' as const }
      }),

    async inventory() {
      // The triggers' counts, summed: exact and never cached (other instances write
      // too), read once per turn for the calls of that turn.
      return { ...(await countsOfTurn('inventory', readCounts)) }
    },
  }
}

/** Each pet given, as the row inserted for it or refused: `inserted` holds the pets whose category exists, in order. */
function matchInserted(pets: readonly NewPet[], inserted: readonly PetRecord[]): InsertResult[] {
  let next = 0
  const results = pets.map((pet): InsertResult => {
    const row = inserted[next]
    if (row === undefined || row.category_id !== pet.categoryId) return { outcome: 'no_such_category' }
    next++
    return { outcome: 'created', pet: toPet(row) }
  })
  if (next !== inserted.length) throw new Error(`a batch of ${pets.length} creates inserted ${inserted.length} rows, ${next} of them matched`)
  return results
}
