// A database as the previous release left it, then upgraded: what every migration test
// starts from. A fresh database of `create` is migrated to `previousRelease`, filled
// by `fill` as that release would have filled it, and opened by today's store, which
// applies every migration after it.
import assert from 'node:assert/strict'
import { Migrator, type Kysely } from 'kysely'
import { migrationProvider } from '../../src/db/migrations/index.js'
import { openStore } from '../../src/db/open-store.js'
import type { Store } from '../../src/db/store.js'
import { openDatabase, type DatabaseHandle } from './database.js'
import type { TestDatabase } from './dialects.js'

export interface UpgradedDatabase {
  database: TestDatabase
  store: Store
  /** A connection of the test's own, to read the tables as they now are. */
  handle: DatabaseHandle
  close(): Promise<void>
}

export async function upgradeFrom(
  create: () => Promise<TestDatabase>,
  previousRelease: string,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the schema of the previous release, not today's Database type
  fill: (db: Kysely<any>) => Promise<unknown>,
): Promise<UpgradedDatabase> {
  const database = await create()
  const old = openDatabase(database.url)
  try {
    const { error, results } = await new Migrator({ db: old.db, provider: migrationProvider(old.dialect) }).migrateTo(previousRelease)
    if (error) throw error
    assert.equal(results?.at(-1)?.migrationName, previousRelease)
    await fill(old.db)
  } finally {
    await old.db.destroy()
  }
  const store = await openStore(database.url)
  const handle = openDatabase(database.url)
  return {
    database,
    store,
    handle,
    async close() {
      await handle.db.destroy()
      await store.close()
      await database.drop()
    },
  }
}
