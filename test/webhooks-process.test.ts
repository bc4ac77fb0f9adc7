// What only real processes show of webhooks, on both stores: SIGTERM lets a delivery
// under way finish and records it; `kill -9` mid-delivery loses nothing (another
// process sends the event again, with the same webhook-id, once the dead one's claim
// runs out); `npm run dispatch` under a supervisor leaves no process behind; and on
// PostgreSQL, several processes delivering at once (servers and a `petstore dispatch`)
// send each event once.
import { after, before, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createTcpServer, type AddressInfo } from 'node:net'
import { DIALECTS, type TestDatabase } from './helpers/dialects.js'
import { createKeyIn, UNLIMITED, withStore } from './helpers/keys.js'
import { spawnDispatcher, spawnServer, type ServerProcess } from './helpers/process.js'

/** A port nobody listens on now. */
async function freePort(): Promise<number> {
  const server = createTcpServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

for (const { dialect, create } of DIALECTS) {
  describe(`webhooks and real processes (${dialect})`, () => {
    let database: TestDatabase
    let receiver: Server
    let receiverUrl: string
    /** Each test subscribes at a path of its own: the endpoints of earlier tests, which take pet events too, are answered and not counted. */
    let path = ''
    /** The webhook-id of each request to this test's path, in the order they arrived. */
    const received: string[] = []
    /** How the receiver answers the request with this index (0 = the first). */
    let answer: (index: number, res: ServerResponse) => void
    const processes: ServerProcess[] = []

    before(async () => {
      database = await create()
      receiver = createServer((req: IncomingMessage, res) => {
        req.resume()
        req.on('end', () => (req.url === path ? answer(received.push(String(req.headers['webhook-id'])) - 1, res) : res.writeHead(204).end()))
      })
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    })
    beforeEach((context) => {
      path = `/${encodeURIComponent(context.name)}`
      receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}${path}`
      received.length = 0
      answer = (_index, res) => res.writeHead(204).end()
    })
    after(async () => {
      for (const { child } of processes) child.kill('SIGKILL')
      receiver.closeAllConnections()
      await new Promise<void>((resolve) => receiver.close(() => resolve()))
      await database.drop()
    })

    const env = (more: Record<string, string> = {}) => ({ DATABASE_URL: database.url, PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8', ...more })
    const start = async (more: Record<string, string> = {}) => {
      const server = await spawnServer(env(more))
      processes.push(server)
      return server
    }
    async function call(url: string, key: string, path: string, body: unknown) {
      const res = await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
      assert.equal(res.status, 201, await res.clone().text())
      return (await res.json()) as { id: number }
    }
    const until = async (done: () => boolean, what: string, seconds = 10) => {
      for (let i = 0; i < seconds * 40 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 25))
      assert.ok(done(), `no ${what} within ${seconds} s`)
    }
    const attemptsOf = (endpointId: number) => withStore(database.url, (store) => store.webhookEndpoints.attempts(endpointId, 100))

    it('on SIGTERM, finishes the delivery under way and records it before exiting 0', async () => {
      const { secret } = await createKeyIn(database.url, { plan: 'enterprise', custom: UNLIMITED })
      const server = await start()
      const endpoint = await call(server.url, secret, '/v1/webhook-endpoints', { url: receiverUrl, enabledEvents: ['pet.created'] })
      answer = (_index, res) => setTimeout(() => res.writeHead(204).end(), 1_500)
      await call(server.url, secret, '/v1/pets', { name: 'In flight', categoryId: 1 })
      await until(() => received.length === 1, 'delivery')
      server.child.kill('SIGTERM')
      assert.equal(await server.exited, 0)
      assert.deepEqual(
        (await attemptsOf(endpoint.id)).map((a) => [a.responseStatus, a.error]),
        [[204, null]],
        'the answer that came after SIGTERM was recorded',
      )
    })

    it('after kill -9 mid-delivery, another process sends the event again once the claim runs out, with the same webhook-id', async () => {
      const { secret } = await createKeyIn(database.url, { plan: 'enterprise', custom: UNLIMITED })
      const lease = { PETSTORE_WEBHOOK_LEASE: '2' }
      const doomed = await start(lease)
      const endpoint = await call(doomed.url, secret, '/v1/webhook-endpoints', { url: receiverUrl, enabledEvents: ['pet.created'] })
      answer = (index, res) => (index === 0 ? undefined : res.writeHead(204).end()) // the first is never answered
      await call(doomed.url, secret, '/v1/pets', { name: 'Killed mid-delivery', categoryId: 1 })
      await until(() => received.length === 1, 'first delivery')
      doomed.child.kill('SIGKILL')
      await doomed.exited
      const heir = await start(lease)
      await until(() => received.length === 2, 'delivery after the claim ran out')
      assert.equal(received[1], received[0], 'the same webhook-id: the receiver deduplicates by it')
      await until(() => received.length === 2, '') // nothing more arrives
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      assert.equal(received.length, 2, 'sent again once, not once per poll')
      assert.deepEqual(
        (await attemptsOf(endpoint.id)).map((a) => a.responseStatus),
        [204],
        'the killed attempt left no record; the one that succeeded did',
      )
      heir.child.kill('SIGTERM')
      await heir.exited
    })

    it('petstore dispatch, started on an idle store, delivers for a server that does not (PETSTORE_DISPATCH=off), serves /metrics on PETSTORE_DISPATCH_METRICS_PORT, and exits 0 on SIGTERM', async () => {
      const { secret } = await createKeyIn(database.url, { plan: 'enterprise', custom: UNLIMITED })
      const metricsPort = await freePort()
      const dispatcher = await spawnDispatcher(env({ PETSTORE_WEBHOOK_LEASE: '2', PETSTORE_DISPATCH_METRICS_PORT: String(metricsPort) }))
      processes.push(dispatcher)
      const writer = await start({ PETSTORE_DISPATCH: 'off' })
      await call(writer.url, secret, '/v1/webhook-endpoints', { url: receiverUrl, enabledEvents: ['pet.created'] })
      // Longer than a poll: a dispatcher with nothing to do yet is still there when work comes.
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      await call(writer.url, secret, '/v1/pets', { name: 'Sent by the dispatcher', categoryId: 1 })
      await until(() => received.length === 1, 'delivery by petstore dispatch')
      // The attempt is counted once recorded, a moment after the receiver has answered (the
      // endpoints of the earlier tests take the pet too: one delivery or more).
      let text = ''
      for (let i = 0; i < 40 && !/outcome="delivered"\} [1-9]\d*$/m.test(text); i++) {
        const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
        assert.equal(metrics.status, 200)
        text = await metrics.text()
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      for (const line of [/^petstore_webhook_deliveries_pending\{state="due"\} \d+$/m, /^petstore_webhook_oldest_pending_seconds \d/m, /^petstore_webhook_attempts_total\{outcome="delivered"\} [1-9]\d*$/m, /^petstore_webhook_delivery_latency_seconds_count [1-9]\d*$/m]) {
        assert.match(text, line)
      }
      assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/v1/pets`)).status, 404, '/metrics is all it serves')
      for (const process of [writer, dispatcher]) {
        process.child.kill('SIGTERM')
        assert.equal(await process.exited, 0)
      }
    })

    it('under npm run dispatch (as a supervisor starts it), the SIGTERM sent to npm stops the dispatcher: no process is left behind', async () => {
      const alive = (pid: number) => {
        try {
          process.kill(pid, 0)
          return true
        } catch {
          return false
        }
      }
      const npm = await spawnDispatcher(env(), 'npmRun')
      const dispatcherPid = Number(npm.url)
      assert.ok(dispatcherPid > 0 && dispatcherPid !== npm.child.pid, `npm runs the dispatcher as a process of its own (${dispatcherPid})`)
      try {
        npm.child.kill('SIGTERM')
        assert.equal(await npm.exited, 0)
        await until(() => !alive(dispatcherPid), `exit of the dispatcher (pid ${dispatcherPid}) after npm's`, 5)
      } finally {
        if (alive(dispatcherPid)) process.kill(dispatcherPid, 'SIGKILL')
      }
    })

    if (dialect === 'postgres') {
      it('sends each event once while several processes deliver: two servers, and a petstore dispatch beside a server that does not', async () => {
        const { secret } = await createKeyIn(database.url, { plan: 'enterprise', custom: UNLIMITED })
        const writer = await start({ PETSTORE_DISPATCH: 'off' })
        const delivering = [await start(), await start(), await spawnDispatcher(env())]
        processes.push(delivering[2]!)
        await call(writer.url, secret, '/v1/webhook-endpoints', { url: receiverUrl, enabledEvents: ['pet.created'] })
        const pets = await Promise.all(Array.from({ length: 30 }, (_, i) => call(writer.url, secret, '/v1/pets', { name: `Pet ${i}`, categoryId: 1 })))
        await until(() => received.length >= pets.length, `${pets.length} deliveries`)
        await new Promise((resolve) => setTimeout(resolve, 1_500))
        assert.equal(received.length, pets.length, 'no event twice')
        assert.equal(new Set(received).size, pets.length)
        for (const process of [writer, ...delivering]) {
          process.child.kill('SIGTERM')
          assert.equal(await process.exited, 0)
        }
      })
    }
  })
}
