// What only the SQLite pets store does, against a real file: pages served from memory
// while the file is unchanged (PRAGMA data_version), and kept by identity while
// their rows are. What every store does is test/store-contract.test.ts.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { openStore } from '../../src/db/open-store.js'
import type { ListPetsQuery } from '../../src/db/pets-store.js'
import { createSqliteGroupCommit } from '../../src/db/batching/group-commit.js'
import { filteredListStatement, nameWalkStatements } from '../../src/db/sql/pets-sql.js'
import { openSqlite } from '../../src/db/sqlite/connection.js'
import { createSqliteCompleteClaim } from '../../src/db/sqlite/idempotency.js'
import { createSqlitePetsStore } from '../../src/db/sqlite/pets-store.js'
import type { Store } from '../../src/db/store.js'
import { insertPet } from '../helpers/pets.js'

describe('SQLite pets store', () => {
  let dir: string
  let file: string
  let store: Store
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-sqlite-pets-'))
    file = join(dir, 'petstore.db')
    store = await openStore(`sqlite:${file}`)
  })
  after(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const everything = async () => (await store.pets.list({ afterId: 0, limit: 1_000_000 })).pets

  it('shows an insert by another process in the next list call', async () => {
    await everything() // cached now
    // A separate process with its own connection, as PETSTORE_WORKERS or a second instance would be.
    const script = `const D = require('better-sqlite3'); const db = new D(process.argv[1]);
      process.stdout.write(String(db.prepare("INSERT INTO pets (name, category_id, status, created_at) VALUES ('elsewhere', 4, 'pending', 1) RETURNING id").pluck().get()))`
    const id = Number(execFileSync(process.execPath, ['-e', script, file], { encoding: 'utf8' }))
    assert.equal((await everything()).at(-1)?.id, id)
    assert.equal((await store.pets.list({ statuses: ['pending'], afterId: 0, limit: 1_000 })).pets.at(-1)?.name, 'elsewhere')
  })

  it('checks freshness after each list call arrived, even when calls of one turn share the check', async () => {
    await everything()
    const first = everything()
    // A commit by another connection after the first call of this turn, before the second.
    const other = new SqliteDatabase(file)
    const id = Number(other.prepare("INSERT INTO pets (name, category_id, status, created_at) VALUES ('between', 6, 'sold', 1)").run().lastInsertRowid)
    other.close()
    const second = everything()
    assert.equal((await second).at(-1)?.id, id, 'the later call sees the commit made before it')
    assert.equal((await first).at(-1)?.id, id, 'the shared check ran after both calls')
  })

  it('never lists a pet of a transaction that is still open or rolled back', async () => {
    const listed = (await everything()).length
    const other = new SqliteDatabase(file)
    try {
      other.prepare('BEGIN IMMEDIATE').run()
      other.prepare("INSERT INTO pets (name, category_id, status, created_at) VALUES ('doomed', 5, 'available', 1)").run()
      assert.equal((await everything()).length, listed, 'an uncommitted pet is not listed')
      other.prepare('ROLLBACK').run()
    } finally {
      other.close()
    }
    assert.ok(!(await everything()).some((pet) => pet.name === 'doomed'))
  })

  it('hands out the cached page shared; after a commit, the same page while its rows are unchanged, a new one once they change', async () => {
    for (let i = 0; i < 3; i++) await insertPet(store.pets, { name: `filler ${i}`, categoryId: 1 }, 1_000)
    const first = await store.pets.list({ afterId: 0, limit: 3 })
    assert.equal(first.shared, true)
    assert.equal(await store.pets.list({ afterId: 0, limit: 3 }), first)
    // A commit that leaves the page's rows as they are: the very same page.
    await insertPet(store.pets, { name: 'newer', categoryId: 1 }, 1_000)
    assert.equal(await store.pets.list({ afterId: 0, limit: 3 }), first)
    // A commit that changes one of its rows (a reservation): a new page with the change.
    const available = await insertPet(store.pets, { name: 'to reserve', categoryId: 1 }, 1_000)
    const page = await store.pets.list({ afterId: available.id - 1, limit: 1 })
    assert.equal((await store.orders.place(available.id, 1, 1_000)).outcome, 'placed')
    const changed = await store.pets.list({ afterId: available.id - 1, limit: 1 })
    assert.notEqual(changed, page)
    assert.equal(changed.pets[0]?.status, 'pending')
  })

  it("reads one category's page from its (category_id, id) index in id order, never sorting the category's pets", () => {
    // A page costs its rows, however many pets the category has: at 1,000,000 pets the
    // cache's read after a commit took 2.3–2.8× the plain list's with a sorter, 1.3× without.
    const planOf = (query: ListPetsQuery) => {
      const { text, values } = filteredListStatement('sqlite', query)
      const db = new SqliteDatabase(file, { readonly: true })
      try {
        return (db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...values) as { detail: string }[]).map((step) => step.detail).join('; ')
      } finally {
        db.close()
      }
    }
    for (const query of [
      { categoryIds: [3], afterId: 0, limit: 21 },
      { categoryIds: [3], afterId: 500, limit: 21, sort: '-id' as const },
      { categoryIds: [3], statuses: ['sold' as const], afterId: 0, limit: 21 },
    ]) {
      const plan = planOf(query)
      assert.match(plan, /USING INDEX pets_category_id \(category_id=\?/, JSON.stringify(query))
      assert.doesNotMatch(plan, /TEMP B-TREE/, `${JSON.stringify(query)}: ${plan}`)
    }
  })

  it('pages a filtered sort=name by walking the names, or by sorting the matches where they are rare, to the same pets either way', async () => {
    // 300 pets in a name order of their own: one in 2 sold, one in 30 a Fish (6), the
    // last 5 by name Birds (3). With a walk of 8 and pages of 3, a sold page is found
    // in the walk, a Fish page is not (the matches are sorted), and the Birds' last
    // page ends the walk at the last pet.
    const db = new SqliteDatabase(file)
    const insert = db.prepare('INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, 1) RETURNING id').pluck()
    const seeded = db.transaction(() =>
      Array.from({ length: 300 }, (_, i) => {
        const name = `walk ${String((i * 7919) % 300).padStart(3, '0')}`
        const categoryId = i % 30 === 0 ? 6 : name >= 'walk 295' ? 3 : 1
        const status = i % 2 === 0 ? 'sold' : 'available'
        return { id: Number(insert.get(name, categoryId, status)), name, categoryId, status }
      }),
    )()
    db.close()
    const connection = openSqlite(file)
    const walking = createSqlitePetsStore({ ...connection, groupCommit: createSqliteGroupCommit(connection.db, connection.writer), completeClaim: createSqliteCompleteClaim(connection.writer), nameWalk: 8 })
    try {
      const paged = async (query: Omit<ListPetsQuery, 'afterId' | 'limit'>) => {
        const seen: { id: number; name: string }[] = []
        for (let after = { afterId: 0, afterName: undefined as string | undefined }; ; ) {
          const { pets } = await walking.list({ ...query, ...after, sort: 'name', limit: 4 })
          seen.push(...pets.slice(0, 3).map(({ id, name }) => ({ id, name })))
          if (pets.length < 4) return seen
          after = { afterId: pets[2]!.id, afterName: pets[2]!.name }
        }
      }
      const expected = (test: (pet: (typeof seeded)[number]) => boolean) =>
        seeded.filter((pet) => pet.name.startsWith('walk ') && test(pet)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.id - b.id)).map(({ id, name }) => ({ id, name }))
      const walked = async (query: Omit<ListPetsQuery, 'afterId' | 'limit'>) => (await paged(query)).filter((pet) => pet.name.startsWith('walk '))
      assert.deepEqual(await walked({ statuses: ['sold'] }), expected((pet) => pet.status === 'sold'))
      assert.deepEqual(await walked({ categoryIds: [6] }), expected((pet) => pet.categoryId === 6))
      assert.deepEqual(await walked({ categoryIds: [3, 6], statuses: ['sold', 'available'] }), expected((pet) => pet.categoryId !== 1))
      assert.deepEqual(await walked({ categoryIds: [3] }), expected((pet) => pet.categoryId === 3))
    } finally {
      walking.close()
      await connection.db.destroy()
    }
  })

  it('reads a search in id order a chunk at a time, letting other reads go between, to the same pages either way', async () => {
    // 60 pets named "chunky …": one in 20 sold. Reading 4 FTS rows a turn, a sold page
    // is found across turns; ascending and descending give every sold one, in order.
    const db = new SqliteDatabase(file)
    const insert = db.prepare('INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, 1) RETURNING id').pluck()
    const seeded = db.transaction(() => Array.from({ length: 60 }, (_, i) => ({ id: Number(insert.get(`chunky ${i}`, 1, i % 20 === 7 ? 'sold' : 'available')), sold: i % 20 === 7 })))()
    db.close()
    const connection = openSqlite(file)
    const chunked = createSqlitePetsStore({ ...connection, groupCommit: createSqliteGroupCommit(connection.db, connection.writer), completeClaim: createSqliteCompleteClaim(connection.writer), streamChunk: 4 })
    try {
      const sold = seeded.filter((pet) => pet.sold).map((pet) => pet.id)
      const paged = async (sort: 'id' | '-id') => {
        const seen: number[] = []
        for (let afterId = 0; ; ) {
          const { pets } = await chunked.list({ q: 'chunky', statuses: ['sold'], sort, afterId, limit: 2 })
          seen.push(...pets.slice(0, 1).map((pet) => pet.id))
          if (pets.length < 2) return seen
          afterId = pets[0]!.id
        }
      }
      assert.deepEqual(await paged('id'), sold)
      assert.deepEqual(await paged('-id'), [...sold].reverse())
      assert.deepEqual((await chunked.list({ q: 'chunky', afterId: 0, limit: 5 })).pets.map((pet) => pet.id), seeded.slice(0, 5).map((pet) => pet.id), 'a common filter ends in the first chunk')
      // A read asked after the search's starts is answered before the search's last chunk.
      const order: string[] = []
      const searching = chunked.list({ q: 'chunky', statuses: ['pending'], afterId: 0, limit: 5 }).then((page) => order.push(`search: ${page.pets.length}`))
      const reading = chunked.find(seeded[0]!.id).then((pet) => order.push(`find: ${pet?.id}`))
      await Promise.all([searching, reading])
      assert.deepEqual(order, [`find: ${seeded[0]!.id}`, 'search: 0'])
      // Closed while a list streams (shutting down after the deadline answered its request): its statement ends, close() does not throw.
      const streaming = chunked.list({ q: 'chunky', statuses: ['pending'], afterId: 0, limit: 6 })
      await new Promise((resolve) => setImmediate(resolve))
      chunked.close()
      assert.deepEqual((await streaming).pets, [])
    } finally {
      await connection.db.destroy()
    }
  })

  it('walks on, a chunk a turn, when a common filter is rare among the next names (names made to sort first), to the same pages', async () => {
    // 40 available pets whose names sort before every other, then 40 more, one in two sold:
    // with a walk of 8 the first page finds no sold pet, and with more than 5 sold in all
    // their matches are not sorted in one go but walked, 4 rows a turn.
    const db = new SqliteDatabase(file)
    const insert = db.prepare('INSERT INTO pets (name, category_id, status, created_at) VALUES (?, 1, ?, 1) RETURNING id').pluck()
    const seeded = db.transaction(() => [
      ...Array.from({ length: 40 }, (_, i) => ({ id: Number(insert.get(`!aaa ${String(i).padStart(2, '0')}`, 'available')), name: `!aaa ${String(i).padStart(2, '0')}`, sold: false })),
      ...Array.from({ length: 40 }, (_, i) => ({ id: Number(insert.get(`!bbb ${String(i).padStart(2, '0')}`, i % 2 ? 'sold' : 'available')), name: `!bbb ${String(i).padStart(2, '0')}`, sold: i % 2 === 1 })),
    ])()
    db.close()
    const connection = openSqlite(file)
    const walking = createSqlitePetsStore({ ...connection, groupCommit: createSqliteGroupCommit(connection.db, connection.writer), completeClaim: createSqliteCompleteClaim(connection.writer), nameWalk: 8, sortAtMost: 5, streamChunk: 4 })
    try {
      const first = await walking.list({ statuses: ['sold'], sort: 'name', afterId: 0, limit: 3 })
      assert.deepEqual(first.pets.map((pet) => pet.name), ['!bbb 01', '!bbb 03', '!bbb 05'])
      const seen: string[] = []
      for (let after = { afterId: 0, afterName: undefined as string | undefined }; ; ) {
        const { pets } = await walking.list({ statuses: ['sold'], sort: 'name', ...after, limit: 4 })
        seen.push(...pets.slice(0, 3).map((pet) => pet.name))
        if (pets.length < 4) break
        after = { afterId: pets[2]!.id, afterName: pets[2]!.name }
      }
      assert.deepEqual(seen.filter((name) => name.startsWith('!')), seeded.filter((pet) => pet.sold).map((pet) => pet.name))
      // A read asked after the walk's starts is answered before the walk ends.
      const order: string[] = []
      const listing = walking.list({ statuses: ['sold'], sort: 'name', afterId: 0, limit: 2 }).then(() => order.push('walk'))
      const reading = walking.find(seeded[0]!.id).then(() => order.push('find'))
      await Promise.all([listing, reading])
      assert.deepEqual(order, ['find', 'walk'])
    } finally {
      walking.close()
      await connection.db.destroy()
    }
  })

  it('walks sort=name with filters in the (name, id) index, never sorting', () => {
    const db = new SqliteDatabase(file, { readonly: true })
    try {
      for (const query of [
        { statuses: ['sold' as const], afterId: 0, limit: 21, sort: 'name' as const },
        { categoryIds: [1, 3], statuses: ['sold' as const, 'pending' as const], afterId: 10, afterName: 'M', limit: 21, sort: 'name' as const },
      ]) {
        const { page, walked } = nameWalkStatements(query, 1_000)!
        for (const { text, values } of [page, walked]) {
          const plan = (db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...values) as { detail: string }[]).map((step) => step.detail).join('; ')
          assert.match(plan, /INDEX pets_name/, plan)
          assert.doesNotMatch(plan, /TEMP B-TREE/, plan)
        }
      }
      assert.equal(nameWalkStatements({ q: 'abc', statuses: ['sold'], afterId: 0, limit: 21, sort: 'name' }, 1_000), undefined, 'q leads')
      assert.equal(nameWalkStatements({ afterId: 0, limit: 21, sort: 'name' }, 1_000), undefined, 'no filter: pets_name in order already')
    } finally {
      db.close()
    }
  })
})
