// Every backend the store has, each with a fresh database of its own: the list the
// store's contract tests loop over, the way kysely loops its tests over DIALECTS. A
// third backend is a folder in src/db/ and a line here.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before } from 'node:test'
import { openDatabase, type DatabaseHandle } from './database.js'
import type { Dialect } from '../../src/db/dialect.js'
import { openStore } from '../../src/db/open-store.js'
import type { Store } from '../../src/db/store.js'
import { createTestDatabase } from './services.js'

export interface TestDatabase {
  url: string
  drop(): Promise<void>
}

export const DIALECTS: { dialect: Dialect; create(): Promise<TestDatabase> }[] = [
  {
    dialect: 'sqlite',
    async create() {
      const dir = mkdtempSync(join(tmpdir(), 'petstore-contract-'))
      return { url: `sqlite:${join(dir, 'petstore.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) }
    },
  },
  { dialect: 'postgres', create: createTestDatabase },
]

export interface StoreUnderTest {
  database: TestDatabase
  store: Store
  /** A connection of the test's own: it sees only what is committed, and writes as another process would. */
  other: DatabaseHandle
}

/**
 * A fresh database of `dialect`, the store opened on it and a connection of the test's
 * own, for the suite of a `describe`: opened before its tests, closed and dropped after.
 * Read its fields inside tests (they are set by the before hook).
 */
export function storeForSuite(create: () => Promise<TestDatabase>): StoreUnderTest {
  const suite = {} as StoreUnderTest
  before(async () => {
    suite.database = await create()
    suite.store = await openStore(suite.database.url)
    suite.other = openDatabase(suite.database.url)
  })
  after(async () => {
    await suite.other?.db.destroy()
    await suite.store?.close()
    await suite.database?.drop()
  })
  return suite
}
