import { sql, type Kysely } from 'kysely'
import type { Dialect } from '../dialect.js'

// PostgreSQL: a finer histogram of pets.name, so that the plan of a name search (`q`,
// `name ILIKE '%lun%'`) no longer depends on luck. The planner estimates a substring
// match by the share of the histogram's entries that match; with the default 100
// entries, a search that a pet in a hundred matches found none about one ANALYZE in
// three (0.99^100), was estimated at 0.01 % (the planner's floor) and planned through
// the trigram index: every match fetched and sorted for a page of 20, 30–40 ms at
// 1,000,000 pets instead of 1–2 ms walking the ids (bench/results.md, issue 37). With
// 1,000 entries that happens about once in 20,000 analyses (0.99^1000), and a search
// matching nothing still takes the trigram index (0.02 ms). The cost: ANALYZE samples 300,000 rows of
// pets (1.6 s at 1,000,000 pets, in the background), and planning a search reads the
// longer histogram (about 0.5 ms instead of under 0.1, beside 1–2 ms of running it).
//
// SQLite needs nothing: its search reads the FTS5 trigram table in id order, whatever
// the statistics.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations see the schema as it was, not today's Database type
export async function up(db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'postgres') return
  await sql`alter table pets alter column name set statistics 1000`.execute(db)
  // Now, not at autovacuum's next analysis: until then the old histogram plans searches.
  await sql`analyze pets`.execute(db)
}
