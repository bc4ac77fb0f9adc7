// A PostgreSQL database of a suite's own, with the service's migrations applied, and a
// client on it for what the suite reads or writes beside the store (plans, statistics):
// made before the suite's tests, dropped after them.
import { after, before } from 'node:test'
import pg from 'pg'
import { openStore } from '../../src/db/open-store.js'
import { createTestDatabase } from './services.js'

export interface MigratedDatabase {
  url: string
  client: pg.Client
}

/** Call inside the suite's describe, once `needs('postgres', …)` has said it runs. */
export function migratedDatabaseForSuite(): MigratedDatabase {
  const suite = {} as MigratedDatabase
  let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined
  before(async () => {
    database = await createTestDatabase()
    suite.url = database.url
    // Opening the store applies the migrations.
    await (await openStore(database.url)).close()
    suite.client = new pg.Client({ connectionString: database.url })
    await suite.client.connect()
  })
  after(async () => {
    await suite.client?.end()
    await database?.drop()
  })
  return suite
}
