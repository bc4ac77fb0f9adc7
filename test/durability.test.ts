// Decision D3: a 201 means the pet is committed durably; it survives kill -9.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { issueApiKey } from '../src/api-keys/issue-key.js'
import { systemClock } from '../src/clock.js'
import { openStore } from '../src/db/store.js'
import { spawnServer } from './helpers/process.js'
import { STORES } from './helpers/server.js'
import { createTestDatabase } from './helpers/services.js'

for (const store of STORES) describe(`durability (${store})`, () => {
  let dir: string
  let databaseUrl: string
  let dropDatabase = async () => {}
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-durability-'))
    databaseUrl = `sqlite:${join(dir, 'petstore.db')}`
    if (store === 'postgres') {
      const database = await createTestDatabase()
      databaseUrl = database.url
      dropDatabase = database.drop
    }
  })
  after(async () => {
    await dropDatabase()
    rmSync(dir, { recursive: true, force: true })
  })

  async function createKey(): Promise<string> {
    const store = await openStore(databaseUrl)
    const { secret } = await issueApiKey(store.apiKeys, systemClock, {
      name: 'durability',
      plan: 'enterprise',
      custom: { perMinute: 1_000_000, perDay: 10_000_000 },
      environment: 'test',
    })
    await store.close()
    return secret
  }

  /** Eight writers POST pets until the server goes away; the signal is sent after 200 acknowledgements. */
  async function writeUntil(signal: NodeJS.Signals) {
    const secret = await createKey()
    const server = await spawnServer({ DATABASE_URL: databaseUrl })
    const acknowledged: number[] = []
    const statuses = new Set<number>()
    let signalled = false
    const writer = async (n: number) => {
      for (let i = 0; ; i++) {
        try {
          const res = await fetch(`${server.url}/v1/pets`, {
            method: 'POST',
            headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
            body: JSON.stringify({ name: `writer ${n} pet ${i}`, categoryId: n + 1 }),
          })
          statuses.add(res.status)
          if (res.status === 201) acknowledged.push(((await res.json()) as { id: number }).id)
          else await res.arrayBuffer()
        } catch {
          return // the server has gone, or refuses new connections
        }
        if (acknowledged.length >= 200 && !signalled) {
          signalled = true
          server.child.kill(signal)
        }
      }
    }
    await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(writer))
    const exit = await server.exited
    assert.ok(acknowledged.length >= 200)

    const reopened = await openStore(databaseUrl)
    try {
      for (const id of acknowledged) assert.ok(await reopened.pets.find(id), `pet ${id} was acknowledged but is gone`)
    } finally {
      await reopened.close()
    }
    return { exit, statuses }
  }

  it('keeps every pet answered 201 when the server is killed with SIGKILL under write load', async () => {
    const { exit } = await writeUntil('SIGKILL')
    assert.equal(exit, 'SIGKILL')
  })

  it('drains on SIGTERM under write load: no 5xx, every 201 kept, exit code 0', async () => {
    const { exit, statuses } = await writeUntil('SIGTERM')
    assert.equal(exit, 0)
    assert.deepEqual([...statuses], [201])
  })
})
