// Decision D3: a 201 means the pet is committed durably; it survives kill -9.
// Decision D10: an order and its pet's status commit together, kill -9 or not.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openDatabase } from './helpers/database.js'
import type { Order } from '../src/schemas/order.js'
import { createKeyIn, UNLIMITED, withStore } from './helpers/keys.js'
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

  const createKey = async () => (await createKeyIn(databaseUrl, { plan: 'enterprise', custom: UNLIMITED })).secret

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
            body: JSON.stringify({ name: `writer ${n} pet ${i}`, categoryId: (n % 7) + 1 }),
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

    await withStore(databaseUrl, async (reopened) => {
      for (const id of acknowledged) assert.ok(await reopened.pets.find(id), `pet ${id} was acknowledged but is gone`)
    })
    return { exit, statuses }
  }

  it('keeps every pet answered 201 when the server is killed with SIGKILL under write load', async () => {
    const { exit } = await writeUntil('SIGKILL')
    assert.equal(exit, 'SIGKILL')
  })

  it('under npm start, gets the SIGTERM sent to npm: it drains and exits, and nothing is left serving', async () => {
    // A supervisor (systemd, Docker) signals the process it started: here npm, whose shell must not keep the signal from the server.
    const server = await spawnServer({ DATABASE_URL: databaseUrl }, 'npmStart')
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200)
    server.child.kill('SIGTERM')
    assert.equal(await server.exited, 0)
    await assert.rejects(fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(2_000) }), 'the server exited with npm')
  })

  it('drains on SIGTERM under write load: no 5xx, every 201 kept, exit code 0', async () => {
    const { exit, statuses } = await writeUntil('SIGTERM')
    assert.equal(exit, 0)
    assert.deepEqual([...statuses], [201])
  })

  it('drains on SIGTERM past connections that sent nothing or half a request: a POST under way gets its 201, then exit 0 at once', async () => {
    const secret = await createKey()
    const server = await spawnServer({ DATABASE_URL: databaseUrl })
    const { hostname, port } = new URL(server.url)
    const open = async (first?: string) => {
      const socket = connect(Number(port), hostname)
      await once(socket, 'connect')
      if (first !== undefined) socket.write(first)
      let received = ''
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()))
      socket.on('error', () => {})
      return { socket, received: () => received, closed: once(socket, 'close') }
    }
    // A balancer's spare connection, and a client stalled within its headers: neither has a request under way.
    await open()
    await open('GET /healthz HTTP/1.1\r\nHost: x\r\n')
    // A POST whose body is not all there when the signal comes.
    const body = JSON.stringify({ name: 'sent slowly', categoryId: 1 })
    const slow = await open(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 5)}`)
    await new Promise((resolve) => setTimeout(resolve, 300))
    const signalled = Date.now()
    server.child.kill('SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 700))
    slow.socket.write(body.slice(5))
    const exit = await server.exited
    const took = Date.now() - signalled
    await slow.closed
    assert.match(slow.received(), /^HTTP\/1\.1 201 /)
    assert.match(slow.received(), /\r\nconnection: close\r\n/i, 'a keep-alive client of a request under way is told to go elsewhere too')
    assert.equal(exit, 0)
    assert.ok(took < 5_000, `exited ${took} ms after SIGTERM (the shutdown timeout is 10 s)`)
  })

  it('never leaves a pet pending without an open order, nor the reverse, when killed with SIGKILL under order load', async () => {
    const secret = await createKey()
    const server = await spawnServer({ DATABASE_URL: databaseUrl })
    const call = async (path: string, body?: unknown) => {
      const res = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      return { status: res.status, body: (await res.json()) as Order & { id: number } }
    }
    const petIds: number[] = []
    for (let i = 0; i < 12; i++) petIds.push((await call('/v1/pets', { name: `adoptable ${i}`, categoryId: 1 })).body.id)

    // Acknowledged (2xx) changes, each to be found as answered after the kill.
    const acknowledged = new Map<number, Order['status']>()
    let signalled = false
    // Bounded: a server that stops acknowledging, or outlives its kill, fails the test
    // after a minute instead of hanging it.
    const deadline = Date.now() + 60_000
    let timedOut = false
    const inTime = () => Date.now() < deadline || ((timedOut = true), server.child.kill('SIGKILL'), false)
    const worker = async (n: number) => {
      for (let i = 0; !signalled && inTime(); i++) {
        if (acknowledged.size >= 150) {
          signalled = true
          server.child.kill('SIGKILL')
        }
        try {
          const placed = await call('/v1/store/orders', { petId: petIds[(n + i) % petIds.length] })
          if (placed.status !== 201) continue
          acknowledged.set(placed.body.id, 'placed')
          // Mostly cancel, so that pets come back; now and then an adoption, and a new pet in its place.
          const action = i % 9 === 0 ? 'complete' : 'cancel'
          const closed = await call(`/v1/store/orders/${placed.body.id}/${action}`)
          if (closed.status === 200) acknowledged.set(closed.body.id, closed.body.status)
          if (action === 'complete') petIds.push((await call('/v1/pets', { name: 'newcomer', categoryId: 1 })).body.id)
        } catch {
          return // the server has gone
        }
      }
      // Go on until the server is gone, so that the kill lands mid-request.
      while (inTime()) {
        try {
          await call('/v1/store/orders', { petId: petIds[n % petIds.length] })
        } catch {
          return
        }
      }
    }
    await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(worker))
    assert.ok(!timedOut, `not done within a minute: ${acknowledged.size} changes acknowledged, killed: ${signalled}`)
    assert.equal(await server.exited, 'SIGKILL')

    const handle = openDatabase(databaseUrl)
    try {
      const pending = await handle.db.selectFrom('pets').select('id').where('status', '=', 'pending').where('id', 'in', petIds).execute()
      const open = await handle.db.selectFrom('orders').select('pet_id').where('status', '=', 'placed').execute()
      assert.deepEqual(open.map((o) => o.pet_id).sort((x, y) => x - y), pending.map((p) => p.id).sort((x, y) => x - y), 'pending pets are exactly the pets of open orders')
      const sold = await handle.db.selectFrom('pets').select('id').where('status', '=', 'sold').execute()
      const completed = await handle.db.selectFrom('orders').select('pet_id').where('status', '=', 'completed').execute()
      assert.deepEqual(completed.map((o) => o.pet_id).sort((x, y) => x - y), sold.map((p) => p.id).sort((x, y) => x - y), 'sold pets are exactly the pets of completed orders')
      const stored = new Map((await handle.db.selectFrom('orders').select(['id', 'status']).execute()).map((o) => [o.id, o.status]))
      for (const [id, status] of acknowledged) {
        const now = stored.get(id)
        assert.ok(now === status || (status === 'placed' && now !== undefined), `order ${id} was answered ${status}, is ${String(now)}`)
      }
    } finally {
      await handle.db.destroy()
    }
  })
})
