// The pets store on SQLite, for the hot path: statements prepared once, list pages
// served from memory while the database is unchanged, inserts committed in groups
// (group-commit.ts, shared with the orders' writes).
//
// Two connections:
// - Kysely's one connection (the writer). Group commits run on it while holding
//   Kysely's connection lock, so they never land inside a transaction that another
//   request has open across an await (transaction.ts holds the same lock). So inside
//   such a transaction, insert with insertIn(trx), never with insert: it would wait
//   for the transaction to end, which waits for it.
// - A read-only connection of our own (the reader) for list, find and inventory. WAL
//   gives it a snapshot per statement: it never sees a transaction that is not
//   committed, and it does not wait for the writer.
//
// Freshness of the page cache: SQLite's `PRAGMA data_version` on the reader changes
// whenever any other connection commits to the file: this process's writer (inserts,
// order transitions) and other processes alike (PETSTORE_WORKERS, another instance,
// the CLI). Every list call waits for a read of it made after the call arrived, and
// drops every cached page when it moved, so no page older than a commit its caller
// could have known about is ever served; a status change is a commit like any other.
// The read is coalesced (read-coalescer.ts): one per event-loop turn, shared by all
// the list calls of that turn (bench/results.md, third pass). find is deferred the
// same way.
import SqliteDatabase from 'better-sqlite3'
import type { Kysely } from 'kysely'
import type { Database } from './schema.js'
import { createSqliteGroupCommit, type GroupCommit } from './group-commit.js'
import { findPet, insertPet, petsStatements, rowToPet, toInventory, transitionPet, type Inventory, type PetRow } from './pets-sql.js'
import type { PetsPage, PetsStore } from './pets-store.js'
import { createReadCoalescer } from './read-coalescer.js'
import type { NewPet, Pet } from '../schemas/pet.js'

export interface SqlitePetsStoreOptions {
  /** Kysely over the writer connection; only its connection lock is used. */
  db: Kysely<Database>
  /** The writer connection itself (Kysely's), to run prepared inserts on. */
  writer: SqliteDatabase.Database
  /** The database file, to open the reader connection on. */
  file: string
  /** The writer's group commit, shared with the orders (sqlite-orders.ts) so that one turn is one commit; by default, one of its own. */
  groupCommit?: GroupCommit
  /** Cached pages kept at most; all are dropped on any commit anyway. */
  maxCachedPages?: number
}

const SQL = petsStatements(() => '?')

export function createSqlitePetsStore(options: SqlitePetsStoreOptions): PetsStore {
  const { db, writer, file, maxCachedPages = 1_000 } = options
  const reader = new SqliteDatabase(file, { readonly: true })
  reader.pragma('busy_timeout = 5000')

  const dataVersion = reader.prepare('PRAGMA data_version').pluck()
  const listAll = reader.prepare(SQL.listAll).raw()
  const listByStatus = reader.prepare(SQL.listByStatus).raw()
  const byId = reader.prepare(SQL.byId).raw()
  const countByStatus = reader.prepare(SQL.countByStatus)
  const insertStatement = writer.prepare(SQL.insert)

  // What is cached while data_version stays the same: pages and the inventory.
  const pages = new Map<string, PetsPage>()
  let inventory: Inventory | undefined
  let cachedVersion: unknown
  const versionOfTurn = createReadCoalescer<unknown>()
  const readVersion = async () => dataVersion.get()
  /** Resolves once the cache holds nothing older than the database as it is now. */
  async function fresh() {
    // Read the version before the rows: a commit in between makes the next call
    // see a new version and drop this page, never the other way round.
    const version = await versionOfTurn('data_version', readVersion)
    if (version !== cachedVersion) {
      pages.clear()
      inventory = undefined
      cachedVersion = version
    }
  }
  const rowOfTurn = createReadCoalescer<PetRow | undefined>()
  const readById = (id: number) => async () => byId.get(id) as PetRow | undefined

  const insertOne = (pet: NewPet, now: number): Pet => {
    const status = pet.status ?? 'available'
    const { lastInsertRowid } = insertStatement.run(pet.name, pet.categoryId, status, now)
    return { id: Number(lastInsertRowid), name: pet.name, categoryId: pet.categoryId, status }
  }
  const groupCommit = options.groupCommit ?? createSqliteGroupCommit(db, writer)

  return {
    async list({ status, afterId, limit }) {
      await fresh()
      const cacheKey = `${status ?? ''}:${afterId}:${limit}`
      let page = pages.get(cacheKey)
      if (!page) {
        const rows = (status ? listByStatus.all(status, afterId, limit) : listAll.all(afterId, limit)) as PetRow[]
        // Frozen, pets included: every caller gets this very page until the next commit.
        page = Object.freeze({ pets: Object.freeze(rows.map((row) => Object.freeze(rowToPet(row)))), shared: true })
        if (pages.size >= maxCachedPages) pages.clear()
        pages.set(cacheKey, page)
      }
      return page
    },

    async find(id) {
      // Deferred like list's version check, so that a turn's reads answer together.
      const row = await rowOfTurn(`id:${id}`, readById(id))
      return row && rowToPet(row)
    },

    insert: (pet, now) => groupCommit(() => insertOne(pet, now)),
    insertIn: insertPet,
    transition: transitionPet,
    findIn: findPet,

    async inventory() {
      await fresh()
      inventory ??= toInventory(countByStatus.all() as { status: string; count: number }[])
      return { ...inventory }
    },

    close() {
      reader.close()
    },
  }
}
