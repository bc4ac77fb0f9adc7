// The pet repository of the SQLite store, for the hot path: the same contract as
// createPetRepository (list, insert, findById), but with statements prepared once,
// list pages served from memory while the database is unchanged, and inserts
// committed in groups. createPetRepository stays the way to work on pets inside a
// Kysely transaction; both see the same file.
//
// Two connections:
// - Kysely's one connection (the writer). Inserts run on it while holding Kysely's
//   connection lock, so they never land inside a Kysely transaction that another
//   request has open across an await. (So inside such a transaction, insert with
//   createPetRepository(trx), never with this repository: it would wait for the
//   transaction to end, which waits for it.)
// - A read-only connection of our own (the reader) for list and findById. WAL gives
//   it a snapshot per statement: it never sees a transaction that is not committed,
//   and it does not wait for the writer.
//
// Freshness of the page cache: SQLite's `PRAGMA data_version` on the reader changes
// whenever any other connection commits to the file, this process's writer included,
// as well as other processes (PETSTORE_WORKERS, the CLI). Every list call waits for a
// read of it made after the call arrived, and drops every cached page when it moved,
// so no page older than a commit its caller could have known about is ever served.
// The read is coalesced (read-coalescer.ts): one per event-loop turn, in setImmediate,
// shared by all the list calls of that turn. So a turn's list calls answer together,
// which measured far cheaper than one native call each, answered between socket
// reads (bench/results.md, third pass). findById is deferred the same way.
//
// A cached page is handed out as it is, frozen, to every caller: the same array for
// as long as it is cached, so a caller may keep what it derives from the page (the
// route keeps its JSON) in a WeakMap keyed by it, and drop it with the page.
import SqliteDatabase from 'better-sqlite3'
import type { Kysely } from 'kysely'
import type { Database } from './schema.js'
import { PET_COLUMNS, type ListPetsQuery, type PetRepository } from './pet-repository.js'
import { createReadCoalescer } from './read-coalescer.js'
import type { NewPet, Pet, PetStatus } from '../schemas/pet.js'

export interface SqlitePetRepositoryOptions {
  /** Kysely over the writer connection; only its connection lock is used. */
  db: Kysely<Database>
  /** The writer connection itself (Kysely's), to run prepared inserts on. */
  writer: SqliteDatabase.Database
  /** The database file, to open the reader connection on. */
  file: string
  /** Cached pages kept at most; all are dropped on any commit anyway. */
  maxCachedPages?: number
}

type PetRow = [id: number, name: string, categoryId: number, status: string]

interface PendingInsert {
  pet: NewPet
  now: number
  resolve: (pet: Pet) => void
  reject: (error: unknown) => void
}

export function createSqlitePetRepository({ db, writer, file, maxCachedPages = 1_000 }: SqlitePetRepositoryOptions): PetRepository & {
  close(): void
} {
  const reader = new SqliteDatabase(file, { readonly: true })
  reader.pragma('busy_timeout = 5000')

  // Raw rows (arrays) are cheaper to build than objects; toPet maps them by position.
  const dataVersion = reader.prepare('PRAGMA data_version').pluck()
  const listAll = reader.prepare(`SELECT ${PET_COLUMNS} FROM pets WHERE id > ? ORDER BY id LIMIT ?`).raw()
  const listByStatus = reader.prepare(`SELECT ${PET_COLUMNS} FROM pets WHERE status = ? AND id > ? ORDER BY id LIMIT ?`).raw()
  const byId = reader.prepare(`SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`).raw()
  const insertOne = writer.prepare('INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?)')

  const pages = new Map<string, readonly Pet[]>()
  let pagesVersion: unknown
  const versionOfTurn = createReadCoalescer<unknown>()
  const readVersion = async () => dataVersion.get()
  const rowOfTurn = createReadCoalescer<PetRow | undefined>()
  const readById = (id: number) => async () => byId.get(id) as PetRow | undefined

  // BEGIN IMMEDIATE: take the write lock up front, so that two processes never both
  // read, then both try to upgrade (which SQLite answers with SQLITE_BUSY at once).
  const insertAll = writer.transaction((batch: PendingInsert[]) =>
    batch.map(({ pet, now }): Pet => {
      const status = pet.status ?? 'available'
      const { lastInsertRowid } = insertOne.run(pet.name, pet.categoryId, status, now)
      return { id: Number(lastInsertRowid), name: pet.name, categoryId: pet.categoryId, status }
    }),
  ).immediate

  let pending: PendingInsert[] = []

  // Group commit: every insert asked for in one event-loop turn goes into one
  // transaction; the promises resolve (and the 201s go out) only once it has
  // committed, so "201 means durable" holds, at one WAL write per group.
  async function flush() {
    const batch = pending
    pending = []
    try {
      // The lock, not the connection object: the prepared statements run on the same connection.
      await db.connection().execute(async () => commit(batch))
    } catch (error) {
      for (const item of batch) item.reject(error)
    }
  }

  function commit(batch: PendingInsert[]) {
    let pets: Pet[]
    try {
      pets = insertAll(batch)
    } catch (error) {
      // One bad row (a constraint) must not fail its neighbours: commit each alone, so
      // only it fails. Anything else (busy, disk full, I/O) fails the whole batch at once:
      // retrying row by row would block the event loop once per row.
      const badRow = String((error as { code?: unknown }).code).startsWith('SQLITE_CONSTRAINT')
      if (batch.length === 1 || !badRow) throw error
      for (const item of batch) {
        try {
          item.resolve(insertAll([item])[0]!)
        } catch (itemError) {
          item.reject(itemError)
        }
      }
      return
    }
    batch.forEach((item, i) => item.resolve(pets[i]!))
  }

  return {
    /** Pets in ascending id order; cost depends on the page size, not the table's size. */
    async list({ status, afterId, limit }: ListPetsQuery): Promise<readonly Pet[]> {
      // Read the version before the rows: a commit in between makes the next call
      // see a new version and drop this page, never the other way round.
      const version = await versionOfTurn('data_version', readVersion)
      if (version !== pagesVersion) {
        pages.clear()
        pagesVersion = version
      }
      const cacheKey = `${status ?? ''}:${afterId}:${limit}`
      let page = pages.get(cacheKey)
      if (!page) {
        const rows = (status ? listByStatus.all(status, afterId, limit) : listAll.all(afterId, limit)) as PetRow[]
        // Frozen, pets included: every caller gets this very array until the next commit.
        page = Object.freeze(rows.map((row) => Object.freeze(toPet(row))))
        if (pages.size >= maxCachedPages) pages.clear()
        pages.set(cacheKey, page)
      }
      return page
    },

    insert(pet: NewPet, now: number): Promise<Pet> {
      return new Promise((resolve, reject) => {
        pending.push({ pet, now, resolve, reject })
        // setImmediate runs after the poll phase: every request read in this turn has queued its insert by then.
        if (pending.length === 1) setImmediate(() => void flush())
      })
    },

    async findById(id: number): Promise<Pet | undefined> {
      // Deferred like list's version check, so that a turn's reads answer together.
      const row = await rowOfTurn(`id:${id}`, readById(id))
      return row && toPet(row)
    },

    close() {
      reader.close()
    },
  }
}

function toPet([id, name, categoryId, status]: PetRow): Pet {
  return { id, name, categoryId, status: status as PetStatus }
}
