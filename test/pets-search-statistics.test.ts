// PostgreSQL plans a name search (`q`) by its estimate of the share of names that
// match, read off pets.name's histogram (migration 2026-11-28-014): with the default
// 100 entries, a search that one name in a hundred matches was often estimated at the
// planner's floor (0.01 %) and read through the trigram index, every match fetched
// and sorted for a page (30–40 ms at 1,000,000 pets instead of 1–2 ms).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { CompiledQuery } from 'kysely'
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
})
