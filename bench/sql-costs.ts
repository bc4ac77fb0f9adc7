// npm run bench:sql [-- --pets N --rounds R --batches B --rows varied|same --only WORD,…]: what each part of a create's
// SQL costs on SQLite, as the group commit runs it (one multi-row INSERT of 50 pets
// in a transaction, migration 010's statement and triggers). One database per variant,
// each migrated as the service migrates it and seeded with N pets, then without one
// part (a trigger or an index) or, for `all`, as the service runs. The variants are
// timed in turns, B batches each, R rounds, in this one process (no HTTP, no
// JavaScript of the service's), so that the machine's other load weighs on every
// variant alike; the median round of each is reported, in µs of CPU a row, with its
// difference to `all`: what that part costs a create.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import { openStore } from '../src/db/open-store.js'
import { insertPetsText } from '../src/db/sqlite/pets-store.js'

const { values } = parseArgs({
  options: {
    pets: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '15' },
    batches: { type: 'string', default: '40' },
    rows: { type: 'string', default: 'varied' },
    only: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
})
if (values.help) {
  console.log('npm run bench:sql -- [--pets N (default 10000)] [--rounds R (default 15)] [--batches B a round (default 40)] [--rows varied|same] [--only WORD,…]')
  console.log('  --only: the variants whose names contain one of these words, beside the service as it runs')
  console.log('  --rows varied (default): names, categories and statuses vary, so each index takes rows all over it, as real data does')
  console.log("  --rows same: every row is npm run bench's POST body ({name: 'Bench', categoryId: 7, status: 'pending'}): each index appends in one place")
  process.exit(0)
}
const PETS = Number(values.pets)
const ROUNDS = Number(values.rounds)
const BATCHES = Number(values.batches)
const BATCH = 50
if (values.rows !== 'varied' && values.rows !== 'same') throw new Error('--rows is varied or same')
const SAME = values.rows === 'same'

interface Variant {
  name: string
  /** What is dropped from the migrated schema. */
  drop: string[]
  /** Pragmas set beyond the service's. */
  pragmas?: string[]
  /** The file's page size, when not SQLite's default (4096): set before it is migrated. */
  pageSize?: number
  /** SQL run after the drops (another form of a part). */
  then?: string[]
  /** Statements run in each batch's transaction after its INSERT, given the batch's first and last id: a part written by the batch instead of a trigger. */
  afterBatch?: string[]
}

/** The event and the count of migration 007's and 004's triggers, written for the whole batch by one statement each. */
const EVENTS_OF_BATCH = `insert into events (type, account_id, data, created_at, fan_out_pending)
  select 'pet.created', null, json_object('id', id, 'name', name, 'category_id', category_id, 'status', status), cast(round((julianday('now') - 2440587.5) * 86400000) as integer),
    case when exists (select 1 from webhook_endpoints e where e.disabled_at is null and (e.enabled_events = '*' or instr(' ' || e.enabled_events || ' ', ' pet.created ') > 0)) then 1 else 0 end
  from pets where id between ? and ? order by id`
const COUNTS_OF_BATCH = 'update pet_status_counts set n = n + (select count(*) from pets where id between ? and ? and pets.status = pet_status_counts.status)'

/** The search index made again with `options` added to migration 010's, and its insert trigger. */
const searchWith = (options: string, after: string[] = []) => [
  'drop trigger pets_search_insert',
  'drop trigger pets_search_update',
  'drop trigger pets_search_delete',
  'drop table pets_search',
  `create virtual table pets_search using fts5(name, content = 'pets', content_rowid = 'id', tokenize = 'trigram case_sensitive 0'${options})`,
  ...after,
  "insert into pets_search (pets_search) values ('rebuild')",
  'create trigger pets_search_insert after insert on pets begin insert into pets_search (rowid, name) values (new.id, new.name); end',
]
const VARIANTS: Variant[] = [
  { name: 'all (as the service runs)', drop: [] },
  { name: 'all, wal_autocheckpoint = 10000', drop: [], pragmas: ['wal_autocheckpoint = 10000'] },
  { name: 'all, checkpoints never run', drop: [], pragmas: ['wal_autocheckpoint = 0'] },
  { name: 'all, cache_size = -65536', drop: [], pragmas: ['cache_size = -65536'] },
  { name: 'all, page_size = 8192', drop: [], pageSize: 8192 },
  { name: 'all, page_size = 16384', drop: [], pageSize: 16384 },
  { name: 'all, search index with columnsize = 0', drop: [], then: searchWith(', columnsize = 0') },
  { name: 'all, search index with automerge = 16', drop: [], then: searchWith('', ["insert into pets_search (pets_search, rank) values ('automerge', 16)"]) },
  { name: 'all, search index with detail = column', drop: [], then: searchWith(', detail = column') },
  { name: 'events and counts written by the batch, not by triggers', drop: ['trigger pets_count_insert', 'trigger pets_event_insert'], afterBatch: [EVENTS_OF_BATCH, COUNTS_OF_BATCH] },
  { name: 'without the count trigger', drop: ['trigger pets_count_insert'] },
  { name: 'without the event trigger', drop: ['trigger pets_event_insert'] },
  { name: "without the events' created_at index", drop: ['index events_created_at'] },
  // A pet's event has no account: it goes into the public events' index (migration 016), the other partial one takes nothing.
  { name: "without the events' public index", drop: ['index events_public_type'] },
  { name: "without the events' indexes", drop: ['index events_created_at', 'index events_public_type', 'index events_account_type'] },
  { name: 'without the search index trigger', drop: ['trigger pets_search_insert'] },
  { name: 'without the category check trigger', drop: ['trigger pets_category_exists_insert'] },
  { name: 'without the name index', drop: ['index pets_name'] },
  { name: 'without the category index', drop: ['index pets_category_id'] },
  { name: 'without the status index', drop: ['index pets_status_id'] },
  {
    name: 'none of these (the insert alone)',
    drop: ['trigger pets_count_insert', 'trigger pets_event_insert', 'trigger pets_search_insert', 'trigger pets_category_exists_insert', 'index pets_name', 'index pets_category_id', 'index pets_status_id'],
  },
]

/** With --only: the variants whose names contain one of its comma-separated words, after the first (as the service runs). */
const CHOSEN = values.only === undefined ? VARIANTS : VARIANTS.filter((variant, i) => i === 0 || values.only!.split(',').some((word) => variant.name.includes(word)))

const names = ['Luna', 'Rex', 'Bella', 'Max', 'Coco', 'Milo', 'Nala', 'Oscar', 'Kiwi', 'Pepper']
const insert = insertPetsText(BATCH)
let n = 0
const batchValues = () =>
  Array.from({ length: BATCH }, () => {
    n++
    return SAME ? ['Bench', 7, 'pending', Date.now()] : [`${names[n % names.length]} ${n}`, 1 + (n % 7), ['available', 'pending', 'sold'][n % 3], Date.now()]
  }).flat()

const dir = mkdtempSync(join(tmpdir(), 'petstore-sql-costs-'))
try {
  const databases = []
  for (const [i, variant] of CHOSEN.entries()) {
    const file = join(dir, `v${i}.db`)
    if (variant.pageSize) {
      const empty = new Database(file)
      empty.pragma(`page_size = ${variant.pageSize}`)
      empty.exec('vacuum')
      empty.close()
    }
    await (await openStore(`sqlite:${file}`)).close()
    const db = new Database(file)
    // The service's pragmas (db/sqlite/connection.ts).
    db.pragma('journal_mode = WAL')
    db.pragma('synchronous = NORMAL')
    db.pragma('foreign_keys = ON')
    for (const what of variant.drop) db.exec(`drop ${what}`)
    for (const pragma of variant.pragmas ?? []) db.pragma(pragma)
    for (const statement of variant.then ?? []) db.exec(statement)
    const statement = db.prepare(insert).pluck()
    const after = (variant.afterBatch ?? []).map((text) => db.prepare(text))
    const batch = db.transaction((values: unknown[]) => {
      const ids = statement.all(...values) as number[]
      if (after.length > 0) {
        const first = Math.min(...ids)
        const last = Math.max(...ids)
        for (const each of after) each.run(first, last)
      }
      return ids
    })
    for (let seeded = 0; seeded < PETS; seeded += BATCH) batch(batchValues())
    databases.push({ variant, db, batch, rounds: [] as number[], system: [] as number[] })
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const entry of databases) {
      const inputs = Array.from({ length: BATCHES }, batchValues)
      // CPU time (user + system), not the clock's: a busy machine takes the core away
      // from a round now and then, but changes what a round costs far less.
      const started = process.cpuUsage()
      for (const values of inputs) entry.batch(values)
      const { user, system } = process.cpuUsage(started)
      entry.rounds.push((user + system) / (BATCHES * BATCH))
      entry.system.push(system / (BATCHES * BATCH))
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const all = median(databases[0]!.rounds)
  console.log(`\nA create's SQL on SQLite, ${PETS.toLocaleString('en-US')} pets seeded, rows ${SAME ? "all npm run bench's POST body" : 'varied'}, batches of ${BATCH} in a transaction, ${ROUNDS} rounds of ${BATCHES} batches (median round)\n`)
  console.log('| Variant | CPU µs a row | of which system | cost of the part left out |')
  console.log('|---|---:|---:|---:|')
  for (const { variant, rounds, system } of databases) {
    const us = median(rounds)
    console.log(`| ${variant.name} | ${us.toFixed(2)} | ${median(system).toFixed(2)} | ${variant === CHOSEN[0] ? '–' : (all - us).toFixed(2)} |`)
  }
  for (const { db } of databases) db.close()
} finally {
  rmSync(dir, { recursive: true, force: true })
}
