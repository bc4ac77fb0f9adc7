// Each migration applies whole or not at all, on both stores: a migration that fails
// halfway (here 003, whose last index name is already taken) leaves none of its
// tables behind, and the next start applies it once the obstacle is gone. On SQLite,
// Kysely runs migrations outside a transaction; the provider opens one (issue 34).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { migrate } from '../src/db/database.js'
import { openDatabase } from './helpers/database.js'
import { DIALECTS } from './helpers/dialects.js'
import { needs } from './helpers/services.js'

for (const { dialect, create } of DIALECTS) {
  describe(`migrations are atomic (${dialect})`, async () => {
    if (dialect === 'postgres' && !(await needs('postgres', 'atomic PostgreSQL migrations'))) return

    it('leaves nothing of a migration that failed halfway, and applies it once it can', async () => {
      const database = await create()
      const handle = openDatabase(database.url)
      try {
        // 003 creates orders, then its indexes; the last one's name is taken by another table's index.
        await sql`create table decoy (x integer)`.execute(handle.db)
        await sql`create index orders_api_key_status_id on decoy (x)`.execute(handle.db)
        await assert.rejects(migrate(handle), /orders_api_key_status_id|already exists/)
        const tables = async () =>
          (dialect === 'sqlite'
            ? (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(handle.db)).rows
            : (await sql<{ name: string }>`select tablename as name from pg_tables where schemaname = 'public'`.execute(handle.db)).rows
          ).map((row) => row.name)
        assert.ok(!(await tables()).includes('orders'), `orders is left behind: ${(await tables()).join(', ')}`)
        await sql`drop index orders_api_key_status_id`.execute(handle.db)
        const applied = await migrate(handle)
        assert.ok(applied.includes('2026-11-23-003-orders'), applied.join(', '))
        assert.ok((await tables()).includes('orders'))
      } finally {
        await handle.db.destroy()
        await database.drop()
      }
    })
  })
}
