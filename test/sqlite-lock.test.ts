// SQLite has one write lock per file, which other processes take too (the CLI,
// `petstore dispatch`). A batch of the service's writes that finds it held waits
// without stopping the process: every other request goes on being served meanwhile.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { hashApiKey } from '../src/api-keys/key-format.js'
import { openStore } from '../src/db/open-store.js'
import { issueTestKey } from './helpers/keys.js'
import type { Store } from '../src/db/store.js'
import { insertPet } from './helpers/pets.js'

describe('SQLite write lock held by another process', () => {
  let dir: string
  let store: Store
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-lock-'))
    store = await openStore(`sqlite:${join(dir, 'petstore.db')}`)
  })
  after(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('waits for the lock without blocking the event loop, then commits', async () => {
    const other = new SqliteDatabase(join(dir, 'petstore.db'))
    other.exec('BEGIN IMMEDIATE')
    let committed = false
    const insert = insertPet(store.pets, { name: 'Patient', categoryId: 1, status: 'available' }, Date.now()).then((pet) => ((committed = true), pet))
    // busy_timeout would sleep inside the write: no timer would fire until it gave up.
    const ticks = await new Promise<number>((resolve) => {
      let n = 0
      const timer = setInterval(() => {
        if (++n === 10) {
          clearInterval(timer)
          resolve(n)
        }
      }, 20)
    })
    assert.equal(ticks, 10)
    assert.equal(committed, false, 'the lock is still held: nothing can have committed')
    assert.equal((await store.pets.list({ afterId: 0, limit: 10 })).pets.length, 0, 'reads go on meanwhile')
    other.exec('COMMIT')
    other.close()
    const pet = await insert
    assert.deepEqual(await store.pets.find(pet.id), pet)
  })

  it('lets a write through Kysely (a key made) wait for the lock without blocking the event loop, then commits', async () => {
    const other = new SqliteDatabase(join(dir, 'petstore.db'))
    other.exec('BEGIN IMMEDIATE')
    let committed = false
    const made = issueTestKey(store.apiKeys, { name: 'patient' }).then((key) => ((committed = true), key))
    const started = performance.now()
    const ticks = await new Promise<number>((resolve) => {
      let n = 0
      const timer = setInterval(() => {
        if (++n === 10) {
          clearInterval(timer)
          resolve(n)
        }
      }, 20)
    })
    assert.equal(ticks, 10)
    assert.ok(performance.now() - started < 1_000, `the timers fired late: ${Math.round(performance.now() - started)} ms`)
    assert.equal(committed, false, 'the lock is still held: nothing can have committed')
    other.exec('COMMIT')
    other.close()
    const key = await made
    assert.equal((await store.apiKeys.findByHash(hashApiKey(key.secret)))?.id, key.id)
  })
})
