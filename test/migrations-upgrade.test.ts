// Upgrading a database of an earlier release: only the server and `petstore migrate`
// apply migrations to it (a command that merely reads must not change the schema under
// that release's servers, which could not read it), migrations are not held to the
// requests' 5 s statement timeout nor to the 10 s in which the database must answer, and
// a database of a later release is called that, not "corrupted".
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Migrator, sql } from 'kysely'
import { migrationProvider } from '../src/db/migrations/index.js'
import { openStoreFromConfig } from '../src/db/from-config.js'
import { runCli } from './helpers/cli.js'
import { openDatabase } from './helpers/database.js'
import { DIALECTS, type TestDatabase } from './helpers/dialects.js'

for (const { dialect, create } of DIALECTS) describe(`upgrading a database (${dialect})`, () => {
  const made: TestDatabase[] = []
  after(() => Promise.all(made.map((database) => database.drop())))

  /** A database migrated up to the one before the last migration, as the release before would have left it. */
  async function ofEarlierRelease(): Promise<{ url: string; last: string }> {
    const database = await create()
    made.push(database)
    const handle = openDatabase(database.url)
    try {
      const names = Object.keys(await migrationProvider(dialect).getMigrations()).sort()
      const { error } = await new Migrator({ db: handle.db, provider: migrationProvider(dialect) }).migrateTo(names.at(-2)!)
      if (error) throw error
      return { url: database.url, last: names.at(-1)! }
    } finally {
      await handle.db.destroy()
    }
  }

  it('leaves an earlier release’s schema alone under any command but migrate, which applies and names what was pending', async () => {
    const { url, last } = await ofEarlierRelease()
    const env = { DATABASE_URL: url, PETSTORE_ENV: 'development' }
    const listed = await runCli(['keys', 'list'], env)
    assert.notEqual(listed.code, 0)
    assert.match(listed.err.join('\n'), /schema is older than this petstore's \(1 migration to apply, from .*\): run `petstore migrate`/)
    const migrated = await runCli(['migrate'], env)
    assert.equal(migrated.code, 0, migrated.err.join('\n'))
    assert.match(migrated.out.join('\n'), new RegExp(`applied 1 migration to .*: ${last}`))
    assert.match(migrated.err.join('\n'), /applying 1 schema migration/)
    assert.equal((await runCli(['keys', 'list'], env)).code, 0)
    assert.match((await runCli(['migrate'], env)).out.join('\n'), /migrations are up to date/)
  })

  it('migrates a database that has no schema yet under any command, so that keys create works on a new one', async () => {
    const database = await create()
    made.push(database)
    const created = await runCli(['keys', 'create', '--plan', 'free'], { DATABASE_URL: database.url, PETSTORE_ENV: 'development' })
    assert.equal(created.code, 0, created.err.join('\n'))
  })

  it('names a database of a later release as such, not as corrupted', async () => {
    const database = await create()
    made.push(database)
    await (await openStoreFromConfig({ databaseUrl: database.url })).close()
    const handle = openDatabase(database.url)
    try {
      await sql`insert into kysely_migration (name, timestamp) values ('2099-01-01-999-from-the-future', '2099-01-01T00:00:00.000Z')`.execute(handle.db)
    } finally {
      await handle.db.destroy()
    }
    await assert.rejects(openStoreFromConfig({ databaseUrl: database.url }), /schema is newer than this petstore's: it has migration 2099-01-01-999-from-the-future/)
  })

  if (dialect === 'postgres') {
    it('waits for another instance’s migrations past the requests’ 5 s statement timeout and past the open deadline', async () => {
      const { url } = await ofEarlierRelease()
      // Another instance migrating: it holds Kysely's migration lock (an advisory lock in a transaction) for 6.5 s.
      const other = openDatabase(url)
      let release = () => {}
      const holding = other.db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(3853314791062309107)`.execute(trx)
        await new Promise<void>((resolve) => (release = resolve))
      })
      const releaseIn = setTimeout(() => release(), 6_500)
      try {
        const started = Date.now()
        const store = await openStoreFromConfig({ databaseUrl: url }, { timeoutMs: 2_000 })
        await store.close()
        assert.ok(Date.now() - started >= 6_000, 'it waited for the lock')
      } finally {
        clearTimeout(releaseIn)
        release()
        await holding
        await other.db.destroy()
      }
    })
  }
})
