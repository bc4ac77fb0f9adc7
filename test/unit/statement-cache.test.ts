// Kysely over SQLite with each statement prepared once per text (db/sqlite/statement-cache.ts):
// the same statement again is the same prepared statement, and one being iterated does
// not stop the same text from running meanwhile.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import SqliteDatabase from 'better-sqlite3'
import { withStatementCache } from '../../src/db/sqlite/statement-cache.js'

describe('the prepared statements of Kysely on SQLite', () => {
  it('prepares a text once, and again only while the one it has is being iterated', () => {
    const writer = new SqliteDatabase(':memory:')
    const cached = withStatementCache(writer)
    try {
      writer.exec('create table t (n integer); insert into t values (1), (2), (3)')
      const text = 'select n from t order by n'
      const first = cached.prepare(text)
      assert.equal(cached.prepare(text), first, 'the same text, the same statement')
      const rows: number[] = []
      for (const row of first.iterate([]) as Iterable<{ n: number }>) {
        // Busy iterating: the same text meanwhile is a statement of its own, and runs.
        const meanwhile = cached.prepare(text)
        assert.notEqual(meanwhile, first)
        assert.deepEqual(meanwhile.all([]), [{ n: 1 }, { n: 2 }, { n: 3 }])
        rows.push(row.n)
      }
      assert.deepEqual(rows, [1, 2, 3])
      assert.equal(cached.prepare(text), first, 'done iterating, it is used again')
      assert.notEqual(cached.prepare('select n from t where n > ?'), first)
    } finally {
      cached.close()
    }
  })
})
