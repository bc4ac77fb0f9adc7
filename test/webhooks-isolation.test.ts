// One tenant's endpoints cannot stall another's, on both stores: a key with 40
// endpoints that never answer, and another key's delivery still goes out within 2 s;
// the number of endpoints an account may have is capped (409 endpoint_limit_reached).
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import type { Pet } from '../src/schemas/pet.js'
import { PER_ENDPOINT_IN_FLIGHT, startDispatcher, type Dispatcher } from '../src/webhooks/dispatcher.js'
import { parseCidrs } from '../src/webhooks/outbound.js'
import { sql } from 'kysely'
import { numbered, openDatabase } from './helpers/database.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

/** A receiver on loopback that answers as `hang` says: never (the socket stays open until close), or 204 at once. */
async function startReceiver(hang: boolean) {
  const sockets = new Set<Socket>()
  let received = 0
  let waiting = 0
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      received++
      if (hang) waiting++
      else res.writeHead(204).end()
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    get received() {
      return received
    },
    get waiting() {
      return waiting
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}

const LIMITS = { perMinute: 100_000, perDay: 1_000_000 }

const until = async (what: () => boolean, ms: number) => {
  const end = performance.now() + ms
  while (!what() && performance.now() < end) await new Promise((resolve) => setTimeout(resolve, 20))
  return what()
}

/**
 * A server with a dispatcher as a server runs it (polling every second, woken by NOTIFY
 * on PostgreSQL, 15 s for an answer), a receiver that never answers and one that does,
 * and a hostile tenant's and another tenant's keys; set up before the suite's tests and
 * closed after. Read its fields inside tests.
 */
function isolationSuite(store: (typeof STORES)[number], env: Record<string, string> = {}) {
  const suite = {} as { server: TestServer; hanging: Receiver; answering: Receiver; dispatcher: Dispatcher; hostile: string; tenant: string }
  before(async () => {
    suite.server = await startTestServer({ store, env: { PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8', ...env } })
    suite.hanging = await startReceiver(true)
    suite.answering = await startReceiver(false)
    suite.dispatcher = startDispatcher({ deliveries: suite.server.store.deliveries, secrets: suite.server.secrets, clock: suite.server.clock, allowed: parseCidrs(['127.0.0.0/8']) })
    suite.hostile = await suite.server.createKey('enterprise', LIMITS)
    suite.tenant = await suite.server.createKey('enterprise', LIMITS)
  })
  after(async () => {
    await suite.hanging?.close()
    await suite.answering?.close()
    await suite.dispatcher?.close()
    await suite.server?.close()
  })
  return suite
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>

const post = <T>(server: TestServer, path: string, json: unknown, key: string) => server.request<T>(path, { method: 'POST', key, json })

/** The other tenant subscribes to order.placed and places an order: whether its webhook arrives within 2 s. */
async function otherTenantDelivered({ server, answering, tenant }: ReturnType<typeof isolationSuite>) {
  assert.equal((await post(server, '/v1/webhook-endpoints', { url: answering.url, enabledEvents: ['order.placed'] }, tenant)).status, 201)
  const pet = (await post<Pet>(server, '/v1/pets', { name: 'Ordered', categoryId: 1 }, tenant)).body
  const started = performance.now()
  assert.equal((await post(server, '/v1/store/orders', { petId: pet.id }, tenant)).status, 201)
  const delivered = await until(() => answering.received >= 1, 2_000)
  assert.ok(delivered, `the other tenant's order.placed delivered within 2 s (not after ${Math.round(performance.now() - started)} ms)`)
}

for (const store of STORES) {
  describe(`webhook isolation between tenants (${store})`, () => {
    const suite = isolationSuite(store, { PETSTORE_WEBHOOK_MAX_ENDPOINTS: '40' })

    it("delivers one tenant's event within 2 s while another's 40 endpoints never answer", async () => {
      const { server, hanging, hostile } = suite
      for (let i = 0; i < 40; i++) {
        const made = await post(server, '/v1/webhook-endpoints', { url: `${hanging.url}?${i}`, enabledEvents: ['pet.created'] }, hostile)
        assert.equal(made.status, 201, made.text)
      }
      // 10 pet events: 400 deliveries that hang, more than a dispatcher may have in flight to those endpoints.
      for (let i = 0; i < 10; i++) await post<Pet>(server, '/v1/pets', { name: `Flood ${i}`, categoryId: 1 }, hostile)
      assert.ok(await until(() => hanging.waiting >= 20, 10_000), `the hanging endpoints are being sent to (${hanging.waiting})`)
      await otherTenantDelivered(suite)
      assert.ok(hanging.waiting <= 40 * PER_ENDPOINT_IN_FLIGHT, `at most ${PER_ENDPOINT_IN_FLIGHT} in flight to each hanging endpoint (${hanging.waiting})`)
    })
  })

  describe(`webhook isolation behind one endpoint's backlog (${store})`, () => {
    const suite = isolationSuite(store)

    it("delivers one tenant's event within 2 s while another's endpoint that never answers has more due deliveries than a claim's window", async () => {
      const { server, hanging, hostile, dispatcher } = suite
      assert.equal((await post(server, '/v1/webhook-endpoints', { url: hanging.url, enabledEvents: ['pet.created'] }, hostile)).status, 201)
      // 1,500 pet events (a receiver down for a while): more due deliveries to the one hanging endpoint than the 1,024 oldest a claim looks at first.
      const raw = openDatabase(server.config.databaseUrl)
      try {
        const { prefix, rows } = numbered(store, 1_500)
        await sql`${sql.raw(prefix)} insert into events (type, account_id, data, created_at, fan_out_pending) select 'pet.created', null, '{"id":1}', ${server.clock.now()}, 1 from ${sql.raw(rows)}`.execute(raw.db)
        dispatcher.wake()
        const due = async () => Number((await raw.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number | string>().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow()).n)
        for (let i = 0; i < 200 && (await due()) < 1_500; i++) await new Promise((resolve) => setTimeout(resolve, 50))
        assert.ok((await due()) >= 1_500, 'the backlog is fanned out')
      } finally {
        await raw.db.destroy()
      }
      assert.ok(await until(() => hanging.waiting >= PER_ENDPOINT_IN_FLIGHT, 5_000), `the hanging endpoint is full (${hanging.waiting})`)
      await otherTenantDelivered(suite)
      assert.equal(hanging.waiting, PER_ENDPOINT_IN_FLIGHT, 'and the hanging endpoint still holds no more than its share')
    })
  })

  describe(`webhook endpoints per account (${store})`, () => {
    let server: TestServer
    before(async () => {
      server = await startTestServer({ store, env: { PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } })
    })
    after(async () => server.close())

    it('refuses a 17th endpoint with 409 endpoint_limit_reached, counting the account across its keys', async () => {
      const key = await server.createKey('enterprise', LIMITS)
      const accountId = await server.accountId(key)
      const second = await server.createKey('enterprise', LIMITS, { accountId })
      const make = (as: string) => server.request<{ id: number; code?: string; message?: string }>('/v1/webhook-endpoints', { method: 'POST', key: as, json: { url: 'http://127.0.0.1:9/hook', enabledEvents: ['*'] } })
      const made = await Promise.all(Array.from({ length: 20 }, (_, i) => make(i % 2 ? key : second)))
      assert.deepEqual(
        made.map((res) => res.status).sort(),
        [...Array(16).fill(201), ...Array(4).fill(409)],
        'made at once, 16 and no more',
      )
      const refused = made.find((res) => res.status === 409)!
      assert.equal(refused.body.code, 'endpoint_limit_reached')
      assert.match(refused.body.message ?? '', /16 webhook endpoints/)
      assert.equal((await server.request<unknown[]>('/v1/webhook-endpoints', { key })).body.length, 16)
      const first = made.find((res) => res.status === 201)!
      await server.request(`/v1/webhook-endpoints/${first.body.id}`, { method: 'DELETE', key })
      assert.equal((await make(key)).status, 201, 'one deleted, one may be made')
      assert.equal((await make(await server.createKey('enterprise', LIMITS))).status, 201, 'another account has its own 16')
    })
  })
}
