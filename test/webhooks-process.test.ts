// What only a real server process shows of webhooks: SIGTERM lets a delivery under way
// finish, and records it, before the process exits. (A dispatcher that dies holding a
// delivery is taken over after its lease: test/webhooks.test.ts, at the store.)
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createKeyIn, UNLIMITED, withStore } from './helpers/keys.js'
import { spawnServer } from './helpers/process.js'

describe('webhooks and the server process', () => {
  let dir: string
  let databaseUrl: string
  let receiver: Server
  let receiverUrl: string
  const requests: string[] = []
  /** Holds each request this long before answering 204. */
  let holdMs = 0

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-webhooks-process-'))
    databaseUrl = `sqlite:${join(dir, 'petstore.db')}`
    receiver = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        requests.push(String(req.headers['webhook-id']))
        setTimeout(() => res.writeHead(204).end(), holdMs)
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`
  })
  after(async () => {
    await new Promise<void>((resolve) => receiver.close(() => resolve()))
    rmSync(dir, { recursive: true, force: true })
  })

  const env = () => ({ DATABASE_URL: databaseUrl, PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' })
  async function call(url: string, key: string, path: string, body: unknown) {
    const res = await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return (await res.json()) as { id: number }
  }
  const until = async (done: () => boolean, what: string) => {
    for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 25))
    assert.ok(done(), `no ${what} within 5 s`)
  }

  it('on SIGTERM, finishes the delivery under way and records it before exiting 0', async () => {
    const { secret } = await createKeyIn(databaseUrl, { plan: 'enterprise', custom: UNLIMITED })
    const server = await spawnServer(env())
    const endpoint = await call(server.url, secret, '/v1/webhook-endpoints', { url: receiverUrl, enabledEvents: ['pet.created'] })
    holdMs = 1_500
    requests.length = 0
    await call(server.url, secret, '/v1/pets', { name: 'In flight', categoryId: 1 })
    await until(() => requests.length === 1, 'delivery')
    server.child.kill('SIGTERM')
    assert.equal(await server.exited, 0)
    const attempts = await withStore(databaseUrl, (store) => store.webhooks.attempts(endpoint.id, 10))
    assert.deepEqual(
      attempts.map((a) => [a.responseStatus, a.error]),
      [[204, null]],
      'the answer that came after SIGTERM was recorded',
    )
  })
})
