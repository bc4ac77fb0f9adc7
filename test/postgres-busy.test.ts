// PostgreSQL busy, not gone: a statement that waits past statement_timeout for a lock
// another session holds (57014), a lock not granted within lock_timeout (55P03), a
// deadlock (40P01). Over HTTP against a real server, each answers 503 with
// Retry-After, as SQLITE_BUSY does (test/sqlite-lock.test.ts), never 500.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import pg from 'pg'
import type { Pet } from '../src/schemas/pet.js'
import { UNLIMITED } from './helpers/keys.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { needs } from './helpers/services.js'

function assertBusy(res: { status: number; text: string; headers: Headers }) {
  assert.equal(res.status, 503, res.text)
  assert.equal(res.headers.get('retry-after'), '1')
  assert.equal(JSON.parse(res.text).code, 'service_unavailable')
  assert.doesNotMatch(res.text, /canceling|deadlock|lock timeout|at .*\.ts/, 'no driver message, no stack')
}

describe('PostgreSQL busy answers 503 with Retry-After', async () => {
  if (!(await needs('postgres', 'PostgreSQL busy'))) return
  let server: TestServer
  let key: string
  let other: pg.Client
  before(async () => {
    server = await startTestServer({ store: 'postgres' })
    key = await server.createKey('enterprise', UNLIMITED)
    other = new pg.Client({ connectionString: server.config.databaseUrl })
    await other.connect()
  })
  after(async () => {
    await other.end()
    await server.close()
  })

  const newPet = async () => (await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: 'Locked', categoryId: 1 } })).body
  const patch = (id: number) =>
    server.request(`/v1/pets/${id}`, { method: 'PATCH', key, headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ status: 'sold' }) })

  it('answers a statement that outlives statement_timeout behind another session\'s lock 503 (57014)', async () => {
    const pet = await newPet()
    await other.query('BEGIN')
    await other.query('SELECT id FROM pets WHERE id = $1 FOR UPDATE', [pet.id])
    try {
      assertBusy(await patch(pet.id))
    } finally {
      await other.query('ROLLBACK')
    }
    assert.equal((await patch(pet.id)).status, 200, 'served once the lock is gone')
  })

  it('answers a lock not granted within lock_timeout 503 (55P03)', async () => {
    // The server's sessions get these timeouts from the database's defaults.
    const name = new URL(server.config.databaseUrl).pathname.slice(1)
    await other.query(`ALTER DATABASE ${name} SET lock_timeout = '200ms'`)
    // New sessions only: the pool's are open already. A second server on the same database opens its own.
    const second = await startTestServer({ env: { DATABASE_URL: server.config.databaseUrl } })
    try {
      const pet = await newPet()
      await other.query('BEGIN')
      await other.query('SELECT id FROM pets WHERE id = $1 FOR UPDATE', [pet.id])
      try {
        const started = performance.now()
        assertBusy(await second.request(`/v1/pets/${pet.id}`, { method: 'PATCH', key, headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ status: 'sold' }) }))
        assert.ok(performance.now() - started < 3_000, 'refused at lock_timeout, not statement_timeout')
      } finally {
        await other.query('ROLLBACK')
      }
    } finally {
      await second.close()
      await other.query(`ALTER DATABASE ${name} RESET lock_timeout`)
    }
  })
})
