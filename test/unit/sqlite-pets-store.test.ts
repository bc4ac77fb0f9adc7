// The SQLite pets hot path: group commit and the page cache, against a real file.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { migrate, openDatabase, type DatabaseHandle } from '../../src/db/database.js'
import type { PetsStore } from '../../src/db/pets-store.js'
import { createSqlitePetsStore } from '../../src/db/sqlite-pets-store.js'
import { createTransact } from '../../src/db/transaction.js'
import type { NewPet, Pet } from '../../src/schemas/pet.js'

describe('SQLite pets store', () => {
  let dir: string
  let handle: DatabaseHandle
  let pets: PetsStore
  let file: string
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-sqlite-pets-'))
    file = join(dir, 'petstore.db')
    handle = openDatabase(`sqlite:${file}`)
    await migrate(handle)
    pets = createSqlitePetsStore({ db: handle.db, writer: handle.sqlite!.connection, file })
  })
  after(async () => {
    pets.close()
    await handle.db.destroy()
    rmSync(dir, { recursive: true, force: true })
  })

  /** Row count as a connection of its own sees it: only what is committed. */
  function committedIds(): number[] {
    const other = new SqliteDatabase(file, { readonly: true })
    try {
      return other.prepare('SELECT id FROM pets ORDER BY id').pluck().all() as number[]
    } finally {
      other.close()
    }
  }

  const everything = async () => (await pets.list({ afterId: 0, limit: 1_000_000 })).pets
  const listed = async (query: Parameters<PetsStore['list']>[0]) => (await pets.list(query)).pets

  it('gives concurrent inserts distinct increasing ids, all committed when they resolve', async () => {
    const before = committedIds().length
    const created = await Promise.all(Array.from({ length: 50 }, (_, i) => pets.insert({ name: `pet ${i}`, categoryId: i + 1 }, 1_000)))
    const ids = created.map((p) => p.id)
    assert.equal(new Set(ids).size, 50)
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'ids follow the order the inserts were asked for')
    assert.deepEqual(created[7], { id: ids[7], name: 'pet 7', categoryId: 8, status: 'available' })
    const committed = committedIds()
    assert.equal(committed.length, before + 50)
    for (const id of ids) assert.ok(committed.includes(id))
  })

  it('fails only the bad insert of a group', async () => {
    const bad = { name: 'bad', categoryId: 1, status: 'lost' } as unknown as NewPet // breaks the CHECK constraint
    const results = await Promise.allSettled([
      pets.insert({ name: 'good 1', categoryId: 1 }, 1_000),
      pets.insert(bad, 1_000),
      pets.insert({ name: 'good 2', categoryId: 1 }, 1_000),
    ])
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    )
    const names = (await everything()).map((p) => p.name)
    assert.ok(names.includes('good 1') && names.includes('good 2') && !names.includes('bad'))
  })

  it('shows an insert of this repository in the very next list call', async () => {
    await everything() // cached now
    const created = await pets.insert({ name: 'fresh', categoryId: 2, status: 'sold' }, 1_000)
    assert.equal((await everything()).at(-1)?.id, created.id)
    assert.equal((await listed({ status: 'sold', afterId: 0, limit: 1_000 })).at(-1)?.id, created.id)
  })

  it('shows an insert inside a transaction (insertIn) in the next list call', async () => {
    await everything()
    const created = await createTransact(handle)((trx) => pets.insertIn(trx, { name: 'via kysely', categoryId: 3 }, 1_000))
    assert.equal((await everything()).at(-1)?.id, created.id)
  })

  it('shows an insert by another process in the next list call', async () => {
    await everything()
    // A separate process with its own connection, as PETSTORE_WORKERS or a second instance would be.
    const script = `const D = require('better-sqlite3'); const db = new D(process.argv[1]);
      process.stdout.write(String(db.prepare("INSERT INTO pets (name, category_id, status, created_at) VALUES ('elsewhere', 4, 'pending', 1) RETURNING id").pluck().get()))`
    const id = Number(execFileSync(process.execPath, ['-e', script, file], { encoding: 'utf8' }))
    assert.equal((await everything()).at(-1)?.id, id)
    assert.equal((await listed({ status: 'pending', afterId: 0, limit: 1_000 })).at(-1)?.name, 'elsewhere')
  })

  it('shows a status change in a transaction (transition) in the next list call, find and inventory', async () => {
    const pet = await pets.insert({ name: 'to reserve', categoryId: 7 }, 1_000)
    const before = await pets.inventory()
    assert.equal((await listed({ status: 'available', afterId: pet.id - 1, limit: 1 }))[0]?.id, pet.id) // cached now
    const moved = await createTransact(handle)((trx) => pets.transition(trx, pet.id, 'available', 'pending'))
    assert.equal(moved, true)
    assert.equal((await listed({ afterId: pet.id - 1, limit: 1 }))[0]?.status, 'pending')
    assert.notEqual((await listed({ status: 'available', afterId: pet.id - 1, limit: 1 }))[0]?.id, pet.id)
    assert.equal((await pets.find(pet.id))?.status, 'pending')
    assert.deepEqual(await pets.inventory(), { ...before, available: before.available - 1, pending: before.pending + 1 })
    assert.equal(await createTransact(handle)((trx) => pets.transition(trx, pet.id, 'available', 'pending')), false, 'only from the status it is in')
  })

  it('shows a status change by another process in the next list call and inventory', async () => {
    const pet = await pets.insert({ name: 'sold elsewhere', categoryId: 8 }, 1_000)
    const before = await pets.inventory() // cached now, with the page below
    assert.equal((await listed({ afterId: pet.id - 1, limit: 1 }))[0]?.status, 'available')
    const script = `const D = require('better-sqlite3'); new D(process.argv[1]).prepare("UPDATE pets SET status = 'sold' WHERE id = ?").run(Number(process.argv[2]))`
    execFileSync(process.execPath, ['-e', script, file, String(pet.id)])
    assert.equal((await listed({ afterId: pet.id - 1, limit: 1 }))[0]?.status, 'sold')
    assert.deepEqual(await pets.inventory(), { ...before, available: before.available - 1, sold: before.sold + 1 })
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

  it('never lists a pet of a transaction that is still open or rolled back, and inserts wait for that transaction', async () => {
    const listed = (await everything()).length
    const order: string[] = []
    let release = () => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    const transaction = createTransact(handle)(async (trx) => {
        await pets.insertIn(trx, { name: 'doomed', categoryId: 5 }, 1_000)
        await held
        throw new Error('roll back')
      })
      .catch(() => {
        order.push('transaction ended')
        return 'rolled back'
      })

    await new Promise((resolve) => setImmediate(resolve))
    assert.equal((await everything()).length, listed, 'an uncommitted pet is not listed')
    const waiting = pets.insert({ name: 'after the transaction', categoryId: 5 }, 1_000).then((pet) => {
      order.push('insert committed')
      return pet
    })
    // The group commit starts in the setImmediate the insert queued, before this one:
    // from here on the insert either waits for the transaction's lock or is done.
    await new Promise((resolve) => setImmediate(resolve))
    release()
    assert.equal(await transaction, 'rolled back')
    const pet = await waiting
    assert.deepEqual(order, ['transaction ended', 'insert committed'], 'the insert waits for the open transaction')
    const names = (await everything()).map((p) => p.name)
    assert.ok(!names.includes('doomed'))
    assert.equal((await everything()).at(-1)?.id, pet.id)
  })

  it('hands out the cached page shared and frozen; after a commit, the same page while its rows are unchanged, a new one once they change', async () => {
    const first = await pets.list({ afterId: 0, limit: 3 })
    assert.equal(first.shared, true)
    assert.ok(Object.isFrozen(first.pets) && first.pets.every((pet) => Object.isFrozen(pet)))
    assert.throws(() => {
      ;(first.pets as Pet[]).length = 1
    }, TypeError)
    assert.equal(await pets.list({ afterId: 0, limit: 3 }), first)
    // A commit that leaves the page's rows as they are: the very same page.
    await pets.insert({ name: 'newer', categoryId: 1 }, 1_000)
    assert.equal(await pets.list({ afterId: 0, limit: 3 }), first)
    // A commit that changes one of its rows: a new page with the change.
    const [, second] = first.pets
    await createTransact(handle)((trx) => pets.transition(trx, second!.id, second!.status, second!.status === 'sold' ? 'available' : 'sold'))
    const changed = await pets.list({ afterId: 0, limit: 3 })
    assert.notEqual(changed, first)
    assert.deepEqual(changed.pets.map((pet) => pet.id), first.pets.map((pet) => pet.id))
    assert.notEqual(changed.pets[1]!.status, second!.status)
  })

  it('finds a pet by id, and nothing for an unknown id', async () => {
    const created = await pets.insert({ name: 'findable', categoryId: 6, status: 'pending' }, 1_000)
    assert.deepEqual(await pets.find(created.id), created)
    assert.equal(await pets.find(999_999_999), undefined)
  })
})
