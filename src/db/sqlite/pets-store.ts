// The pets store on SQLite, for the hot path: statements prepared once, list pages
// served from memory while the database is unchanged, inserts committed in groups
// (batching/group-commit.ts, shared with the orders' writes).
//
// Two connections:
// - Kysely's one connection (the writer). Every write runs on it in the group
//   commit, under Kysely's connection lock.
// - A read-only connection of our own (the reader) for list, find and inventory. WAL
//   gives it a snapshot per statement: it never sees a transaction that is not
//   committed, and it does not wait for the writer.
//
// Freshness of the page cache: SQLite's `PRAGMA data_version` on the reader changes
// whenever any other connection commits to the file: this process's writer (inserts,
// order transitions) and other processes alike (PETSTORE_WORKERS, another instance,
// the CLI). Every list call waits for a read of it made after the call arrived, and
// reads its page again when the version moved since the page was read, so no page
// older than a commit its caller could have known about is ever served; a status
// change is a commit like any other. When the rows read again are the ones cached
// (most commits touch other pages: a reservation of a pet far down the list), the
// cached page object is kept, and with it the JSON the route made of it.
// The read is coalesced (read-coalescer.ts): one per event-loop turn, shared by all
// the list calls of that turn (bench/results.md, third pass). find is deferred the
// same way.
//
// Creates: the creates of one group commit go in as one multi-row INSERT (as
// PostgreSQL's do), so that the triggers of every row (the count, the event, the
// search index) run inside one statement. FTS5 writes what it holds to disk at every
// statement's savepoint: one statement a row made one index segment a row, and cost a
// create 41 µs of SQLite where a batch of 50 costs 17 (docs/benchmarks.md). The
// triggers stay as they are, exact for every writer.
import { setImmediate, setTimeout as sleep } from 'node:timers/promises'
import SqliteDatabase from 'better-sqlite3'
import type { GroupCommit } from '../batching/group-commit.js'
import { createGate } from '../gate.js'
import { createReadCoalescer } from '../batching/read-coalescer.js'
import { isPlainList, type InsertResult, type ListPetsQuery, type PetPrecondition, type PetsPage, type PetsStore } from '../pets-store.js'
import { changed, filteredKey, filteredListStatement, nameWalkStatements, petsStatements, searchStreamStatement, nameWalkStreamStatement, matchesAtMostStatement, STREAM_TICK, rowToPet, toInventory, type Inventory, type PetRow, type Statement } from '../sql/pets-sql.js'
import type { CompleteClaim } from './idempotency.js'
import { chunks, marks, statementsByRows } from './statements-by-rows.js'
import type { Completion } from '../idempotency-store.js'
import type { NewPet, Pet } from '../../schemas/pet.js'

export interface SqlitePetsStoreOptions {
  /** The writer connection (Kysely's), to run prepared inserts on. */
  writer: SqliteDatabase.Database
  /** The database file, to open the reader connection on. */
  file: string
  /** The writer's group commit, shared with the orders (orders-store.ts) so that one turn is one commit. */
  groupCommit: GroupCommit
  /** Completes an Idempotency-Key claim inside an insert's operation. */
  completeClaim: CompleteClaim
  /** Cached pages kept at most (all are dropped when it is reached). */
  maxCachedPages?: number
  /** Pets a `sort=name` list with filters walks in name order before it sorts the matches instead (sql/pets-sql.ts, nameWalkStatements). */
  nameWalk?: number
  /** Rows a streamed list (a search in id order, a long walk in name order) reads between turns of the event loop. */
  streamChunk?: number
  /** Matches of a `sort=name` filter, rare among the next names, sorted in one go; more are walked. */
  sortAtMost?: number
}

const SQL = petsStatements(() => '?')
/**
 * How many pets a `sort=name` list with filters walks in name order (about a
 * millisecond at 1,000,000 pets, each one a row read) before it sorts the matches
 * instead: a filter that matches fewer than a page of them is rare, under 1 in 50 for
 * a page of 20, so few matches are sorted (unless they cluster later in the names).
 */
const NAME_WALK = 1_000
/** Rows a streamed list (a search, a long walk) reads between turns of the event loop: about 3 ms, what another request waits for at most. */
const STREAM_CHUNK = 4_096
/** Streamed lists that wait for the one reading (its connection), each at most STREAM_MAX_WAIT_MS; beyond, one is answered 503. */
const STREAMS_WAITING = 8
/** Well within the request deadline (7 s): a list not started by then is refused, not run for a caller already answered. */
const STREAM_MAX_WAIT_MS = 3_000
/** The streaming connection's rest between two lists, for the writer to find no reader (and start the WAL again). */
const STREAM_REST_MS = 5
/**
 * Matches of a `sort=name` filter sorted in one go (up to about 15 ms) when it is rare
 * among the next names; more are walked, a chunk a turn. Walked, 6,000 matches that sort
 * late took 100 times their sort.
 */
const SORT_AT_MOST = 20_000

/** The creates of a group commit: `rows` pets in one INSERT, their ids returned (npm run bench:sql times it too). */
export const insertPetsText = (rows: number) => `INSERT INTO pets (name, category_id, status, created_at) VALUES ${marks(rows, '(?, ?, ?, ?)')} RETURNING id`

/** A create waiting for its group commit. */
interface Create {
  pet: NewPet
  now: number
  completion: Completion | undefined
}

/** The pets store on SQLite; `close()` closes its reader and streamer connections. */
export function createSqlitePetsStore(options: SqlitePetsStoreOptions): PetsStore & { close(): void } {
  const { writer, file, groupCommit, completeClaim, maxCachedPages = 1_000, nameWalk = NAME_WALK, streamChunk = STREAM_CHUNK, sortAtMost = SORT_AT_MOST } = options
  const reader = new SqliteDatabase(file, { readonly: true })
  reader.pragma('busy_timeout = 5000')
  const streamer = new SqliteDatabase(file, { readonly: true })
  streamer.pragma('busy_timeout = 5000')
  let failed = 0
  streamer.function(STREAM_TICK, { deterministic: false }, () => (++failed % streamChunk === 0 ? 1 : 0))
  const streamStatements = new Map<string, SqliteDatabase.Statement>()
  /** The statement a list is streaming from, while one is. */
  let reading: IterableIterator<unknown[]> | undefined
  const streaming = createGate({ permits: 1, queue: STREAMS_WAITING, maxWaitMs: STREAM_MAX_WAIT_MS, what: 'searches and long lists' })

  const dataVersion = reader.prepare('PRAGMA data_version').pluck()
  const listAll = reader.prepare(SQL.listAll).raw()
  const listByStatus = reader.prepare(SQL.listByStatus).raw()
  const byId = reader.prepare(SQL.byId).raw()
  const countByStatus = reader.prepare(SQL.countByStatus)
  const insertStatement = writer.prepare(SQL.insert)
  const updateStatement = writer.prepare(SQL.update)
  const removeStatement = writer.prepare(SQL.remove)
  const lockedById = writer.prepare(SQL.byId).raw()
  const openOrderOf = writer.prepare(SQL.openOrderOf)
  // On the writer, inside the group commit: nothing deletes the category before the commit.
  const categoryExists = writer.prepare(SQL.categoryExists).pluck()

  /**
   * The pet as the writer sees it inside the group commit (SQLite has one writer, so
   * nothing changes it until the commit), or why the change is refused.
   */
  const changeable = (id: number, precondition: PetPrecondition | undefined, statusChanges: (current: Pet) => boolean) => {
    const row = lockedById.get(id) as PetRow | undefined
    if (!row) return { refused: { outcome: 'no_such_pet' as const } }
    const current = rowToPet(row)
    if (precondition && !precondition(current)) return { refused: { outcome: 'precondition_failed' as const, current } }
    if (statusChanges(current)) {
      const open = openOrderOf.get(id) as { id: number; accountId: number } | undefined
      if (open !== undefined) return { refused: { outcome: 'pet_in_order' as const, orderId: open.id, accountId: open.accountId } }
    }
    return { current }
  }

  // Pages and the inventory, each with the data_version it was read at.
  const pages = new Map<string, { page: PetsPage; version: unknown }>()
  let counts: { inventory: Inventory; version: unknown } | undefined
  const versionOfTurn = createReadCoalescer<unknown>()
  const readVersion = async () => dataVersion.get()
  // Read the version before the rows: a commit in between makes the next call see a
  // new version and read the rows again, never the other way round.
  const currentVersion = () => versionOfTurn('data_version', readVersion)
  const rowOfTurn = createReadCoalescer<PetRow | undefined>()
  const readById = (id: number) => async () => byId.get(id) as PetRow | undefined

  // The filtered lists' statements, prepared once each: their texts depend only on which filters are given (sql/pets-sql.ts).
  const filteredStatements = new Map<string, SqliteDatabase.Statement>()
  const prepared = (text: string) => {
    let statement = filteredStatements.get(text)
    if (!statement) filteredStatements.set(text, (statement = reader.prepare(text).raw()))
    return statement
  }
  const run = ({ text, values }: Statement) => prepared(text).all(...values)
  // The walk's page and its count in one read transaction: with another process writing
  // (PETSTORE_WORKERS, the CLI), a pet deleted between the two would make a short page
  // look like the last one. Undefined: the filter is rare among the next names.
  const readWalking = reader.transaction((query: ListPetsQuery, walk: NonNullable<ReturnType<typeof nameWalkStatements>>): unknown[] | undefined => {
    const rows = run(walk.page)
    if (rows.length === query.limit) return rows
    const [walked] = prepared(walk.walked.text).get(...walk.walked.values) as [number]
    return walked < nameWalk ? rows : undefined
  })
  /**
   * The first `limit` passing rows of a stream (sql/pets-sql.ts: searchStreamStatement,
   * nameWalkStreamStatement), with a turn of the event loop at each of its ticks (every
   * `streamChunk` rows that fail): a list that reads many rows to fill its page costs
   * its caller the time, and everyone else a chunk's wait at most. The statement stays
   * open across those turns, so it has a connection of its own (the reader's statements
   * cannot run while one is open on it), for one such list at a time; and between two of
   * them the connection rests a moment, so that the writer's commits find no reader and
   * the WAL starts again from its beginning (an open reader keeps it growing).
   * (Starting a statement again after each chunk cost FTS5 25 times the reading.)
   */
  const readStreamed = ({ text, values }: Statement, limit: number): Promise<unknown[]> =>
    streaming(async () => {
      let statement = streamStatements.get(text)
      if (!statement) streamStatements.set(text, (statement = streamer.prepare(text).raw()))
      const rows: unknown[] = []
      const read = statement.iterate(...values) as IterableIterator<unknown[]>
      reading = read
      try {
        for (let row = read.next(); !row.done; row = read.next()) {
          if (row.value.at(-1) !== 1) {
            await setImmediate()
            continue
          }
          rows.push(row.value.slice(0, -1))
          if (rows.length === limit) break
        }
      } finally {
        // Ends the statement, and with it the snapshot: the rest is not read.
        read.return?.()
        reading = undefined
      }
      await sleep(STREAM_REST_MS)
      return rows
    })
  const readFiltered = async (query: ListPetsQuery): Promise<unknown[]> => {
    // A search in id order with a status or category filter, and no ids (which bound it), is streamed; without one its page ends at its first matches.
    if (query.q !== undefined && (query.sort ?? 'id') !== 'name' && query.ids === undefined && (query.statuses?.length || query.categoryIds !== undefined)) {
      return readStreamed(searchStreamStatement({ ...query, q: query.q }), query.limit)
    }
    const walk = nameWalkStatements(query, nameWalk)
    if (!walk) return run(filteredListStatement('sqlite', query))
    const walked = readWalking(query, walk)
    if (walked) return walked
    // Rare among the next names: sorting its matches is cheap when they are few in all;
    // else (names that sort first made to push them back) walk on, a chunk a turn.
    const few = matchesAtMostStatement(query, sortAtMost)
    return (prepared(few.text).get(...few.values) as [number])[0] === 1 ? run(filteredListStatement('sqlite', query)) : readStreamed(nameWalkStreamStatement(query), query.limit)
  }


  const insertOne = (pet: NewPet, now: number): Pet => {
    // (Checked by the caller; the trigger of migration 010 would refuse it anyway.)
    const status = pet.status ?? 'available'
    const { lastInsertRowid } = insertStatement.run(pet.name, pet.categoryId, status, now)
    return { id: Number(lastInsertRowid), name: pet.name, categoryId: pet.categoryId, status }
  }
  const insertMany = statementsByRows(writer, insertPetsText, true)
  /** Inserts `creates` in a few statements; their pets, in the same order. */
  const insertAll = (creates: readonly Create[]): Pet[] =>
    chunks(creates).flatMap((chunk) => {
      const pets = chunk.map(({ pet }) => ({ id: 0, name: pet.name, categoryId: pet.categoryId, status: pet.status ?? 'available' }))
      const values = pets.flatMap(({ name, categoryId, status }, i) => [name, categoryId, status, chunk[i]!.now])
      // Rows get increasing ids in the order of VALUES: sorted, the ids match the chunk.
      const ids = (insertMany(chunk.length).all(...values) as number[]).sort((a, b) => a - b)
      return pets.map((pet, i) => ({ ...pet, id: ids[i]! }))
    })
  /** The create's answer, its Idempotency-Key claim completed in the same operation (a lost claim undoes the pet too). */
  const createdAs = (pet: Pet, completion: Completion | undefined): InsertResult => {
    if (completion) completeClaim(completion, pet)
    return { outcome: 'created', pet }
  }
  const create = groupCommit.together<Create, InsertResult>({
    all(creates) {
      const results: InsertResult[] = new Array(creates.length)
      // Each category asked once; on the writer, inside the group commit, nothing deletes it before the commit.
      const known = new Map<number, boolean>()
      const exists = (categoryId: number) => {
        let found = known.get(categoryId)
        if (found === undefined) known.set(categoryId, (found = categoryExists.get(categoryId) !== undefined))
        return found
      }
      const valid = creates.flatMap((create, i) => {
        if (exists(create.pet.categoryId)) return [i]
        results[i] = { outcome: 'no_such_category' }
        return []
      })
      const pets = insertAll(valid.map((i) => creates[i]!))
      valid.forEach((i, n) => (results[i] = createdAs(pets[n]!, creates[i]!.completion)))
      return results
    },
    one({ pet, now, completion }) {
      if (categoryExists.get(pet.categoryId) === undefined) return { outcome: 'no_such_category' }
      return createdAs(insertOne(pet, now), completion)
    },
  })

  return {
    async list(query) {
      const version = await currentVersion()
      const plain = isPlainList(query)
      const status = query.statuses?.[0]
      const { afterId, limit } = query
      const cacheKey = plain ? `${status ?? ''}:${afterId}:${limit}` : filteredKey(query)
      const cached = pages.get(cacheKey)
      if (cached && cached.version === version) return cached.page
      const rows = (plain ? (status ? listByStatus.all(status, afterId, limit) : listAll.all(afterId, limit)) : await readFiltered(query)) as PetRow[]
      if (cached && samePets(cached.page.pets, rows)) {
        cached.version = version
        return cached.page
      }
      // Frozen, pets included: every caller gets this very page until its rows change.
      const page = Object.freeze({ pets: Object.freeze(rows.map((row) => Object.freeze(rowToPet(row)))), shared: true })
      if (!cached && pages.size >= maxCachedPages) pages.clear()
      pages.set(cacheKey, { page, version })
      return page
    },

    async find(id) {
      // Deferred like list's version check, so that a turn's reads answer together.
      const row = await rowOfTurn(`id:${id}`, readById(id))
      return row && rowToPet(row)
    },

    insert: (pet, now, completion) => create({ pet, now, completion }),

    update: (id, changes, precondition) =>
      groupCommit(() => {
        const found = changeable(id, precondition, (current) => changed(current, changes).statusChanges)
        if (found.refused) return found.refused
        const { pet } = changed(found.current, changes)
        if (pet.categoryId !== found.current.categoryId && categoryExists.get(pet.categoryId) === undefined) return { outcome: 'no_such_category' as const }
        updateStatement.run(pet.name, pet.categoryId, pet.status, id)
        return { outcome: 'updated' as const, pet }
      }),

    remove: (id, precondition) =>
      groupCommit(() => {
        const found = changeable(id, precondition, () => true)
        if (found.refused) return found.refused
        removeStatement.run(id)
        return { outcome: 'removed' as const }
      }),

    async inventory() {
      // Three rows kept by triggers (migrations/2026-11-24-004), read again only when a
      // commit moved data_version, as the list pages are: one version check per turn
      // costs less than a statement per call.
      const version = await currentVersion()
      if (!counts || counts.version !== version) counts = { inventory: toInventory(countByStatus.all() as { status: string; count: number }[]), version }
      return { ...counts.inventory }
    },

    close() {
      reader.close()
      // A list still streaming (its request answered by the deadline) would keep the
      // connection busy, and close() would throw: its statement ends first.
      reading?.return?.()
      streamer.close()
    },
  }
}

/** Whether `rows` are exactly the pets of `pets`, field by field. */
function samePets(pets: readonly Pet[], rows: readonly PetRow[]): boolean {
  return (
    pets.length === rows.length &&
    rows.every(([id, name, categoryId, status], i) => {
      const pet = pets[i]!
      return pet.id === id && pet.name === name && pet.categoryId === categoryId && pet.status === status
    })
  )
}
