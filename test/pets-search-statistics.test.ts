// PostgreSQL plans a name search (`q`) by its estimate of the share of names that
// match, read off pets.name's histogram (migration 2026-11-28-014): with the default
// 100 entries, a search that one name in a hundred matches was often estimated at the
// planner's floor (0.01 %) and read through the trigram index, every match fetched
// and sorted for a page (30–40 ms at 1,000,000 pets instead of 1–2 ms).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { CompiledQuery } from 'kysely'
import type pg from 'pg'
import { openPostgres } from '../src/db/postgres/connection.js'
import { createPostgresPetsStore } from '../src/db/postgres/pets-store.js'
import { StoreBusyError } from '../src/db/store-errors.js'
import { storeForSuite } from './helpers/dialects.js'
import { createTestDatabase, needs } from './helpers/services.js'

describe("the name search's statistics (postgres)", async () => {
  if (!(await needs('postgres', "the name search's statistics"))) return
  // The store migrates the database; the test reads and writes it on a connection of its own.
  const suite = storeForSuite(createTestDatabase)
  const query = async <R>(text: string) => (await suite.other.db.executeQuery<R>(CompiledQuery.raw(text))).rows

  it("estimates a search one name in a hundred matches at about that share, and walks the ids for its page", async () => {
    // 20,000 pets (ANALYZE reads them all, so the histogram is the same every run); every 101st name holds "lun".
    await query(`insert into pets (name, category_id, status, created_at)
      select case when i % 101 = 0 then 'Pet ' || lpad(i::text, 5, '0') || ' lun' else 'Pet ' || lpad(i::text, 5, '0') end, 1, 'available', 0
      from generate_series(1, 20000) as i`)
    await query('analyze pets')
    const text = "SELECT p.id, p.name, p.category_id, p.status FROM pets p WHERE p.name ILIKE '%lun%' ORDER BY p.id LIMIT 21"
    const [plan] = (await query<{ 'QUERY PLAN': { Plan: { Plans: { 'Plan Rows': number; 'Index Name'?: string }[] } }[] }>(`EXPLAIN (FORMAT JSON) ${text}`))[0]!['QUERY PLAN']
    const scan = plan!.Plan.Plans[0]!
    // 198 match; the default histogram saw none of them (an estimate of 2 rows, and the trigram index).
    assert.ok(scan['Plan Rows'] >= 100 && scan['Plan Rows'] <= 400, `estimated ${scan['Plan Rows']} rows`)
    assert.equal(scan['Index Name'], 'pets_pkey')
  })

  /** The PostgreSQL pets store over a pool of its own, and every query it sends. */
  function watchedStore() {
    const { pool, db } = openPostgres(suite.database.url)
    const sent: pg.QueryConfig[] = []
    const query = pool.query.bind(pool) as (config: pg.QueryConfig) => Promise<pg.QueryResult>
    // Every query the store sends is a QueryConfig (pets-store.ts); it still goes to the database.
    pool.query = ((config: pg.QueryConfig) => (sent.push(config), query(config))) as typeof pool.query
    return { pets: createPostgresPetsStore(pool), sent, close: () => db.destroy() }
  }

  it('sends a search unnamed, so that no generic plan of it (a walk of every id) outlives the pattern it was made for', async () => {
    const { pets, sent, close } = watchedStore()
    try {
      for (let i = 0; i < 7; i++) await pets.list({ q: `+++${i}`, afterId: 0, limit: 20 })
      await pets.list({ categoryIds: [1, 2], afterId: 0, limit: 20 })
      const searches = sent.filter((config) => /ILIKE/.test(config.text))
      assert.equal(searches.length, 7)
      assert.deepEqual(searches.map((config) => config.name), Array(7).fill(undefined), 'each search planned for its own pattern')
      assert.match(sent.at(-1)!.name ?? '', /^petstore_pets_filtered_/, 'a filter without a search stays prepared once a connection')
    } finally {
      await close()
    }
  })

  it('lets two searches hold connections and sixteen wait, and refuses more at once: the rest of the pool stays for everyone else', async () => {
    const { pets, close } = watchedStore()
    try {
      const made = await pets.insert({ name: 'Rex', categoryId: 1 }, 0)
      assert.equal(made.outcome, 'created')
      const id = made.outcome === 'created' ? made.pet.id : 0
      // Started in one turn: none can have finished before the last asks.
      const asked = Array.from({ length: 20 }, (_, i) => pets.list({ q: `look ${i}`, afterId: 0, limit: 20 }).then(() => 'served', (error: unknown) => error))
      // Meanwhile a plain read is not queued behind them.
      assert.equal(await pets.find(id).then((pet) => pet?.id), id)
      const outcomes = await Promise.all(asked)
      assert.equal(outcomes.filter((outcome) => outcome === 'served').length, 18)
      const refused = outcomes.filter((outcome) => outcome !== 'served')
      assert.equal(refused.length, 2)
      for (const error of refused) {
        assert.ok(error instanceof StoreBusyError, String(error))
      }
      assert.deepEqual(await pets.list({ q: 'look again', afterId: 0, limit: 20 }), { pets: [], shared: true }, 'served again once they are done')
    } finally {
      await close()
    }
  })
})
