// Events and webhooks on both stores, with real receivers (HTTP servers on loopback)
// whose signatures are checked by the `standardwebhooks` package, not our own code:
// the outbox (an event per committed change, none for a refused one), delivery and
// retries, 410, redirects, a lost connection, secret rotation, test events, the
// address guard, and dispatchers that share the work (each delivery once) or take
// over a delivery whose dispatcher died holding it.
import { after, before, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import { sql, type Kysely } from 'kysely'
import pg from 'pg'
import { Webhook } from 'standardwebhooks'
import { createManualClock } from '../src/clock.js'
import type { Order } from '../src/schemas/order.js'
import type { Pet } from '../src/schemas/pet.js'
import { REREAD_AFTER_MS, startDispatcher, type Dispatcher } from '../src/webhooks/dispatcher.js'
import type { Event } from '../src/webhooks/events.js'
import { parseCidrs } from '../src/webhooks/outbound.js'
import { createWebhookAdmin } from '../src/webhooks/webhook-admin.js'
import type { Scope } from '../src/vocabulary/scopes.js'
import { numbered, openDatabase } from './helpers/database.js'
import type { Database } from '../src/db/schema.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

interface Received {
  url: string
  headers: IncomingHttpHeaders
  body: string
}

/** A receiver on loopback: it records every request and answers as `answer` says (200 by default). */
async function startReceiver() {
  const received: Received[] = []
  let answer: (n: number) => { status: number; headers?: Record<string, string>; delayMs?: number } | 'hang-up' = () => ({ status: 200 })
  const server: Server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      received.push({ url: req.url ?? '', headers: req.headers, body })
      const reply = answer(received.length)
      if (reply === 'hang-up') return req.socket.destroy()
      setTimeout(() => res.writeHead(reply.status, reply.headers).end('ok'), reply.delayMs ?? 0)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    answerWith(next: typeof answer) {
      answer = next
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

const LOOPBACK = parseCidrs(['127.0.0.0/8'])
const SCHEDULE = [5_000, 60_000]

for (const store of STORES) {
  describe(`events and webhooks (${store})`, () => {
    // Kept ahead of the real time (set in before): the triggers date deliveries by the database's clock.
    const clock = createManualClock()
    let server: TestServer
    let key: string
    let other: string
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let dispatcher: Dispatcher

    before(async () => {
      clock.set(Date.now() + 5_000)
      server = await startTestServer({ store, clock, env: { PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } })
      key = await server.createKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 })
      other = await server.createKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 })
      receiver = await startReceiver()
      dispatcher = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false })
    })
    after(async () => {
      await dispatcher.close()
      await receiver.close()
      await server.close()
    })
    beforeEach(async () => {
      // Each test starts with no endpoint and nothing queued: a failed test's leftovers must not fail the next.
      for (const { id } of (await server.request<{ id: number }[]>('/v1/webhook-endpoints', { key })).body) {
        await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
      }
      receiver.received.length = 0
      receiver.answerWith(() => ({ status: 200 }))
    })

    const post = <T>(path: string, json: unknown, as = key) => server.request<T>(path, { method: 'POST', key: as, json })
    const newPet = async () => (await post<Pet>('/v1/pets', { name: 'Hooked', categoryId: 1 })).body
    const endpoint = async (enabledEvents: string[], as = key) =>
      (await post<{ id: number; secret: string }>('/v1/webhook-endpoints', { url: receiver.url, enabledEvents }, as)).body
    const events = async (as = key, query = '') => (await server.request<Event[]>(`/v1/events${query}`, { key: as })).body
    /** `n` pet.created events written straight into the database, as a bulk load would: `data` each, made at `createdAt`, waiting to be fanned out or not. */
    const writeEvents = async (db: Kysely<Database>, n: number, { data, createdAt = clock.now(), pending }: { data: string; createdAt?: number; pending: boolean }) => {
      const { prefix, rows } = numbered(store, n)
      await sql`${sql.raw(prefix)} insert into events (type, account_id, data, created_at, fan_out_pending) select 'pet.created', null, ${data}, ${createdAt}, ${pending ? 1 : 0} from ${sql.raw(rows)}`.execute(db)
    }
    /** How many rows of `table` (deliveries, attempts) an endpoint has. */
    const rowsOf = async (db: Kysely<Database>, table: 'webhook_deliveries' | 'webhook_attempts', endpointId: number) =>
      Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<number | string>().as('n')).where('endpoint_id', '=', endpointId).executeTakeFirstOrThrow()).n)
    /** `n` pet.created events waiting to be fanned out, written as the triggers write them. */
    const backlog = async (n: number) => {
      const raw = openDatabase(server.config.databaseUrl)
      try {
        await writeEvents(raw.db, n, { data: JSON.stringify({ id: 1, name: 'Backlogged', category_id: 1, status: 'available' }), pending: true })
      } finally {
        await raw.db.destroy()
      }
    }

    it('writes an event with every committed change, the resource as the API returns it, and none for a refused one', async () => {
      const pet = await newPet()
      const order = (await post<Order>('/v1/store/orders', { petId: pet.id })).body
      assert.equal((await post('/v1/store/orders', { petId: pet.id }, other)).status, 409, 'refused: no order, so no event')
      const completed = (await post<Order>(`/v1/store/orders/${order.id}/complete`, undefined)).body
      const concerning = (event: Event) => (event.type.startsWith('pet.') ? (event.data as Pet).id === pet.id : (event.data as Order).id === order.id)
      const mine = (await events(key, '?limit=20')).filter(concerning).reverse()
      assert.deepEqual(
        mine.map((event) => [event.type, event.data]),
        [
          ['pet.created', pet],
          // A reservation changes the pet and places the order in one transaction: both events, in either order.
          ...(mine[1]!.type === 'order.placed' ? [['order.placed', order], ['pet.updated', { ...pet, status: 'pending' }]] : [['pet.updated', { ...pet, status: 'pending' }], ['order.placed', order]]),
          ...(mine[3]!.type === 'order.completed' ? [['order.completed', completed], ['pet.updated', { ...pet, status: 'sold' }]] : [['pet.updated', { ...pet, status: 'sold' }], ['order.completed', completed]]),
        ],
      )
      for (const event of mine) assert.match(event.id, /^evt_\d+$/)
      // Pets are shared; orders are their key's.
      const theirs = await events(other, '?limit=20')
      assert.ok(theirs.some((event) => event.type === 'pet.created' && (event.data as Pet).id === pet.id))
      assert.ok(!theirs.some((event) => event.type.startsWith('order.')), 'another key sees no order event of this one')
      assert.deepEqual((await events(key, '?type=order.completed&limit=1'))[0]!.data, completed)
    })

    it('delivers to the subscribed endpoint, signed so that a Standard Webhooks library verifies it', async () => {
      const { id, secret } = await endpoint(['order.placed'])
      const pet = await newPet()
      const order = (await post<Order>('/v1/store/orders', { petId: pet.id })).body
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 1, 'only the subscribed type')
      const [delivery] = receiver.received
      const payload = new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>) as Event
      assert.equal(payload.type, 'order.placed')
      assert.deepEqual(payload.data, order)
      assert.equal(delivery!.headers['webhook-id'], payload.id)
      assert.equal(delivery!.headers['content-type'], 'application/json')
      assert.match(delivery!.headers['user-agent'] ?? '', /^petstore-webhooks\//)
      assert.throws(() => new Webhook(secret).verify(delivery!.body.replace('placed', 'forged'), delivery!.headers as Record<string, string>))
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('sends a test event on demand, and redelivers an event', async () => {
      const { id, secret } = await endpoint(['order.placed'])
      const queued = await server.request<Event>(`/v1/webhook-endpoints/${id}/test`, { method: 'POST', key })
      assert.equal(queued.status, 202)
      await dispatcher.pollNow()
      const test = new Webhook(secret).verify(receiver.received[0]!.body, receiver.received[0]!.headers as Record<string, string>) as Event
      assert.equal(test.type, 'webhook_endpoint.test')
      const [placed] = await events(key, '?type=order.placed&limit=1')
      // The fan-out's own rule: neither an endpoint subscribed to other types nor a disabled one gets it.
      const elsewhere = await endpoint(['pet.created'])
      const disabled = await endpoint(['order.placed'])
      await server.request(`/v1/webhook-endpoints/${disabled.id}`, { method: 'PATCH', key, json: { enabled: false } })
      assert.deepEqual((await post(`/v1/events/${placed!.id}/redeliver`, undefined)).body, { deliveries: 1 })
      for (const other of [elsewhere, disabled]) await server.request(`/v1/webhook-endpoints/${other.id}`, { method: 'DELETE', key })
      await dispatcher.pollNow()
      assert.equal(receiver.received[1]!.headers['webhook-id'], placed!.id)
      const attempts = (await server.request<{ trigger: string }[]>(`/v1/webhook-endpoints/${id}/deliveries`, { key })).body
      assert.deepEqual(attempts.map((a) => a.trigger), ['manual', 'manual'])
      assert.equal((await post(`/v1/events/${placed!.id}/redeliver`, undefined, other)).status, 404, 'another key\'s order event')
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('signs with both secrets while the old one is in its grace period', async () => {
      const { id, secret: old } = await endpoint(['pet.created'])
      const rotated = (await post<{ secret: string }>(`/v1/webhook-endpoints/${id}/rotate-secret`, { grace: 3_600 })).body
      assert.notEqual(rotated.secret, old)
      await newPet()
      await dispatcher.pollNow()
      const [delivery] = receiver.received
      assert.equal(String(delivery!.headers['webhook-signature']).split(' ').length, 2)
      for (const secret of [old, rotated.secret]) new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>)
      clock.advance(3_601_000)
      await newPet()
      await dispatcher.pollNow()
      assert.equal(String(receiver.received[1]!.headers['webhook-signature']).split(' ').length, 1, 'the old secret no longer signs')
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('retries a failed delivery on schedule with the same webhook-id, and lists every attempt', async () => {
      const { id } = await endpoint(['pet.created'])
      receiver.answerWith((n) => (n === 1 ? { status: 503, headers: { 'retry-after': '7' } } : n === 2 ? 'hang-up' : { status: 204 }))
      await newPet()
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 1)
      clock.advance(6_000)
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 1, 'Retry-After: 7 is honoured over the 5 s of the schedule')
      clock.advance(2_000)
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 2, 'the second attempt: the receiver closes the socket')
      clock.advance(66_000)
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 3)
      assert.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, 1, 'one webhook-id for every attempt')
      const attempts = (await server.request<{ responseStatus: number | null; error: string | null; trigger: string }[]>(`/v1/webhook-endpoints/${id}/deliveries`, { key })).body
      assert.deepEqual(
        attempts.map((a) => [a.responseStatus, a.error === null, a.trigger]),
        [
          [204, true, 'scheduled'],
          [null, false, 'scheduled'],
          [503, true, 'scheduled'],
        ],
      )
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('records an attempt that throws as a failed attempt, with its error, and retries it on schedule', async () => {
      // A URL no stored endpoint could have today: the attempt throws before it sends.
      const accountId = await server.accountId(key)
      const broken = (await server.store.webhookEndpoints.insertEndpoint({ accountId, url: 'not a url', description: '', enabledEvents: 'pet.created', secret: 'whsec_c2VjcmV0' }, clock.now()))!
      try {
        await newPet()
        await dispatcher.pollNow()
        const first = (await server.request<{ error: string | null; nextAttemptAt: string | null }[]>(`/v1/webhook-endpoints/${broken.id}/deliveries`, { key })).body
        assert.equal(first.length, 1, 'the attempt is recorded')
        assert.match(first[0]!.error ?? '', /^could not be sent: Invalid URL/)
        const due = Date.parse(first[0]!.nextAttemptAt ?? '')
        assert.ok(due >= clock.now() + 4_500 && due <= clock.now() + 5_500, `retried after the schedule's 5 s (${first[0]!.nextAttemptAt})`)
        await dispatcher.pollNow()
        assert.equal((await server.store.webhookEndpoints.attempts(broken.id, 10)).length, 1, 'not before it is due')
        for (let i = 0; i < 3; i++) {
          clock.advance(70_000)
          await dispatcher.pollNow()
        }
        const attempts = await server.store.webhookEndpoints.attempts(broken.id, 10)
        assert.equal(attempts.length, SCHEDULE.length + 1, 'then failed for good, like any failing delivery')
        assert.equal(attempts[0]!.deliveryNextAttemptAt, null)
      } finally {
        await server.store.webhookEndpoints.deleteEndpoint(accountId, broken.id)
      }
    })

    it("honours Retry-After up to the schedule's next step, and says when the next attempt is due", async () => {
      const { id } = await endpoint(['pet.created'])
      receiver.answerWith(() => ({ status: 503, headers: { 'retry-after': '999999999' } }))
      await newPet()
      await dispatcher.pollNow()
      const [attempt] = (await server.request<{ responseStatus: number; nextAttemptAt: string | null }[]>(`/v1/webhook-endpoints/${id}/deliveries`, { key })).body
      assert.equal(attempt!.responseStatus, 503)
      assert.equal(Date.parse(attempt!.nextAttemptAt ?? ''), clock.now() + SCHEDULE[1]!, 'capped at the next step (60 s here), not in 2058')
      receiver.answerWith(() => ({ status: 204 }))
      clock.advance(SCHEDULE[1]!)
      await dispatcher.pollNow()
      const attempts = (await server.request<{ responseStatus: number; nextAttemptAt: string | null }[]>(`/v1/webhook-endpoints/${id}/deliveries`, { key })).body
      assert.deepEqual(
        attempts.map((a) => [a.responseStatus, a.nextAttemptAt]),
        [
          [204, null],
          [503, null],
        ],
        'delivered: nothing more is due',
      )
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('sends nothing more from the queue for an event type the endpoint unsubscribed from since the fan-out', async () => {
      const { id } = await endpoint(['pet.created', 'order.placed'])
      receiver.answerWith(() => ({ status: 503 }))
      await newPet()
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 1)
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'PATCH', key, json: { enabledEvents: ['order.placed'] } })
      clock.advance(6_000)
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 1, 'the retry of a pet.created is not sent')
      const attempts = (await server.request<{ error: string | null }[]>(`/v1/webhook-endpoints/${id}/deliveries`, { key })).body
      assert.equal(attempts[0]!.error, 'not sent: the endpoint no longer takes pet.created events')
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('delivers the pet events written after an endpoint subscribes to them or is enabled again (migration 2026-11-28-019)', async () => {
      const { id } = await endpoint(['order.placed'])
      await newPet()
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'PATCH', key, json: { enabledEvents: ['pet.created'] } })
      const subscribed = await newPet()
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'PATCH', key, json: { enabled: false } })
      await newPet()
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'PATCH', key, json: { enabled: true } })
      const enabled = await newPet()
      await dispatcher.pollNow()
      const sent = receiver.received.map(({ body }) => JSON.parse(body) as Event)
      assert.deepEqual(
        sent.map((event) => [event.type, (event.data as Pet).id]).sort((a, b) => Number(a[1]) - Number(b[1])),
        [['pet.created', subscribed.id], ['pet.created', enabled.id]],
        'the pets created while it took order events alone, or was disabled, are not sent',
      )
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('says why a redelivery went to no endpoint', async () => {
      const reason = async (eventId: string) => (await post<{ deliveries: number; reason?: string }>(`/v1/events/${eventId}/redeliver`, undefined)).body
      const { id } = await endpoint(['order.placed'])
      const test = (await server.request<Event>(`/v1/webhook-endpoints/${id}/test`, { method: 'POST', key })).body
      await dispatcher.pollNow()
      const pet = await newPet()
      const [created] = (await events(key, '?type=pet.created&limit=5')).filter((event) => (event.data as Pet).id === pet.id)
      assert.deepEqual(await reason(created!.id), { deliveries: 0, reason: 'No enabled webhook endpoint of this account subscribes to pet.created (enabledEvents).' })
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'PATCH', key, json: { enabled: false } })
      assert.match((await reason(test.id)).reason ?? '', /^A test event goes only to the endpoint it was made for/)
      assert.match((await reason(created!.id)).reason ?? '', /^Every webhook endpoint of this account is disabled/)
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
      assert.deepEqual(await reason(created!.id), { deliveries: 0, reason: 'This account has no webhook endpoint.' })
    })

    it('redelivers a test event to the endpoint it was made for alone, whatever the others subscribe to', async () => {
      const own = await endpoint(['order.placed'])
      const everything = await endpoint(['*'])
      const test = (await server.request<Event>(`/v1/webhook-endpoints/${own.id}/test`, { method: 'POST', key })).body
      await dispatcher.pollNow()
      assert.deepEqual((await post(`/v1/events/${test.id}/redeliver`, undefined)).body, { deliveries: 1 })
      await dispatcher.pollNow()
      const attempts = async (id: number) => (await server.request<{ eventId: string }[]>(`/v1/webhook-endpoints/${id}/deliveries`, { key })).body.map((a) => a.eventId)
      assert.deepEqual(await attempts(own.id), [test.id, test.id], 'its own endpoint: the test, then the redelivery')
      assert.deepEqual(await attempts(everything.id), [], 'an endpoint subscribed to * gets no test event of another')
      assert.equal(receiver.received.length, 2)
    })

    it('sends nothing more from the queue to an endpoint disabled after the fan-out, and says why in its attempts', async () => {
      const { id } = await endpoint(['pet.created'])
      receiver.answerWith(() => ({ status: 503 }))
      await newPet()
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 1)
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'PATCH', key, json: { enabled: false } })
      clock.advance(6_000)
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 1, 'the retry due after the endpoint was disabled is not sent')
      const attempts = (await server.request<{ responseStatus: number | null; error: string | null }[]>(`/v1/webhook-endpoints/${id}/deliveries`, { key })).body
      assert.deepEqual(attempts.map((a) => [a.responseStatus, a.error]), [[null, 'not sent: the endpoint is disabled'], [503, null]])
      const test = await server.request<{ code: string; message: string }>(`/v1/webhook-endpoints/${id}/test`, { method: 'POST', key })
      assert.equal(test.status, 409, 'a test event it would not be sent is refused, not queued')
      assert.equal(test.body.code, 'endpoint_disabled')
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'PATCH', key, json: { enabled: true } })
      clock.advance(120_000)
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 1, 'enabled again, it gets new events, not the ones refused while disabled')
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it("deletes an endpoint's long history in short statements: other requests are answered meanwhile, and none of it is left", async () => {
      const doomed = await endpoint(['pet.created'])
      const kept = await endpoint(['pet.created'])
      const history = 30_000
      const raw = openDatabase(server.config.databaseUrl)
      const count = (table: 'webhook_deliveries' | 'webhook_attempts', endpointId: number) => rowsOf(raw.db, table, endpointId)
      try {
        const marker = JSON.stringify({ history: doomed.id })
        await writeEvents(raw.db, history, { data: marker, pending: false })
        // Each event delivered to the doomed endpoint; the first also to the kept one.
        const delivered = (endpointId: number, first: string) => sql`insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at)
          select ${endpointId}, id, 'delivered', 1, ${clock.now()}, ${clock.now()} from events where data = ${marker} ${sql.raw(first)}`
        await delivered(doomed.id, '').execute(raw.db)
        await delivered(kept.id, 'order by id limit 1').execute(raw.db)
        await sql`insert into webhook_attempts (delivery_id, endpoint_id, event_id, trigger, at, duration_ms, response_status, error)
          select id, endpoint_id, event_id, 'scheduled', ${clock.now()}, 5, 200, null from webhook_deliveries where endpoint_id in (${doomed.id}, ${kept.id})`.execute(raw.db)
        assert.equal(await count('webhook_attempts', doomed.id), history)

        const answered: string[] = []
        const deleting = server.request(`/v1/webhook-endpoints/${doomed.id}`, { method: 'DELETE', key }).finally(() => answered.push('delete'))
        const reading = server.request('/v1/pets?limit=1', { key }).finally(() => answered.push('read'))
        assert.equal((await deleting).status, 204)
        assert.equal((await reading).status, 200)
        assert.deepEqual(answered, ['read', 'delete'], 'a read sent while the deletion goes on is answered before it ends')
        assert.equal(await count('webhook_deliveries', doomed.id), 0)
        assert.equal(await count('webhook_attempts', doomed.id), 0)
        assert.equal(await count('webhook_attempts', kept.id), 1, "another endpoint's history stays")
        assert.equal((await server.request(`/v1/webhook-endpoints/${doomed.id}`, { key })).status, 404)
      } finally {
        await raw.db.destroy()
      }
    })

    it('purges the events older than 30 days a batch at a time, with their deliveries and attempts, but not one still pending; reads are answered meanwhile', async () => {
      const { id } = await endpoint(['pet.created'])
      const old = 20_000
      const day = 86_400_000
      const raw = openDatabase(server.config.databaseUrl)
      const count = (table: 'webhook_deliveries' | 'webhook_attempts') => rowsOf(raw.db, table, id)
      try {
        const marker = JSON.stringify({ purged: id })
        // 20,000 events of 40 days ago and one of today, each delivered to the endpoint with an attempt; one more of 40 days ago still pending.
        await writeEvents(raw.db, old, { data: marker, createdAt: clock.now() - 40 * day, pending: false })
        await sql`insert into events (type, account_id, data, created_at, fan_out_pending) values ('pet.created', null, ${marker}, ${clock.now()}, 0), ('pet.created', null, ${marker}, ${clock.now() - 40 * day}, 0)`.execute(raw.db)
        const pendingEvent = Number((await sql<{ id: number | string }>`select max(id) as id from events where data = ${marker}`.execute(raw.db)).rows[0]!.id)
        await sql`insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at)
          select ${id}, id, case when id = ${pendingEvent} then 'pending' else 'delivered' end, 1, ${clock.now() + day}, ${clock.now()} from events where data = ${marker}`.execute(raw.db)
        await sql`insert into webhook_attempts (delivery_id, endpoint_id, event_id, trigger, at, duration_ms, response_status, error)
          select id, endpoint_id, event_id, 'scheduled', ${clock.now()}, 5, 200, null from webhook_deliveries where endpoint_id = ${id}`.execute(raw.db)

        const answered: string[] = []
        const purging = server.store.deliveries.purge(clock.now() - 30 * day).finally(() => answered.push('purge'))
        const reading = server.request('/v1/pets?limit=1', { key }).finally(() => answered.push('read'))
        await purging
        assert.equal((await reading).status, 200)
        assert.deepEqual(answered, ['read', 'purge'], 'a read sent while the purge goes on is answered before it ends')
        const left = await sql<{ id: number | string; created_at: number | string }>`select id, created_at from events where data = ${marker} order by id`.execute(raw.db)
        assert.deepEqual(
          left.rows.map((row) => Number(row.created_at)),
          [clock.now(), clock.now() - 40 * day],
          "today's event, and the old one still pending",
        )
        assert.equal(await count('webhook_deliveries'), 2)
        assert.equal(await count('webhook_attempts'), 2)
      } finally {
        await raw.db.destroy()
      }
    })

    it('sends nothing to the endpoints of a disabled account, queued or new', async () => {
      const { id } = await endpoint(['pet.created'])
      receiver.answerWith(() => ({ status: 503 }))
      await newPet()
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 1)
      const accountId = await server.accountId(key)
      await server.store.accounts.update(accountId, { disabledAt: clock.now() })
      try {
        await post('/v1/pets', { name: 'Unheard', categoryId: 1 }, other)
        clock.advance(6_000)
        await dispatcher.pollNow()
        assert.equal(receiver.received.length, 1, 'neither the queued retry nor a new pet event')
        const attempts = await server.store.webhookEndpoints.attempts(id, 10)
        assert.deepEqual(attempts.map((a) => a.error), ['not sent: its account is disabled', null])
      } finally {
        await server.store.accounts.update(accountId, { disabledAt: null })
      }
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('follows no redirect, and gives up after the schedule', async () => {
      const { id } = await endpoint(['pet.created'])
      receiver.answerWith(() => ({ status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } }))
      await newPet()
      for (let i = 0; i < 4; i++) {
        await dispatcher.pollNow()
        clock.advance(70_000)
      }
      assert.equal(receiver.received.length, SCHEDULE.length + 1, 'the first attempt and one per step of the schedule, then no more')
      const attempts = (await server.request<{ responseStatus: number }[]>(`/v1/webhook-endpoints/${id}/deliveries`, { key })).body
      assert.ok(attempts.every((a) => a.responseStatus === 302))
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('disables an endpoint that answers 410 Gone, and says so with a webhook_endpoint.disabled event', async () => {
      const { id } = await endpoint(['pet.created'])
      receiver.answerWith(() => ({ status: 410 }))
      await newPet()
      await dispatcher.pollNow()
      const read = (await server.request<{ status: string }>(`/v1/webhook-endpoints/${id}`, { key })).body
      assert.equal(read.status, 'disabled')
      const [disabled] = await events(key, '?type=webhook_endpoint.disabled&limit=1')
      assert.equal((disabled!.data as { id: number }).id, id)
      await newPet()
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 1, 'nothing more to a disabled endpoint')
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it("tells the key's other endpoints, once, that an endpoint was disabled", async () => {
      const gone = await endpoint(['pet.created'])
      const watching = await endpoint(['webhook_endpoint.disabled'])
      receiver.answerWith((n) => (n <= 2 ? { status: 410 } : { status: 204 }))
      await newPet()
      await newPet()
      await dispatcher.pollNow() // both deliveries answered 410, in one batch
      await dispatcher.pollNow() // the event the disabling wrote, fanned out and sent
      const told = receiver.received.slice(2).map((r) => JSON.parse(r.body) as Event)
      assert.deepEqual(
        told.map((event) => [event.type, (event.data as { id: number }).id]),
        [['webhook_endpoint.disabled', gone.id]],
      )
      assert.equal((await events(key, '?type=webhook_endpoint.disabled')).filter((event) => (event.data as { id: number }).id === gone.id).length, 1)
      for (const { id } of [gone, watching]) await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('counts a receiver that does not answer in time as a failure, and tries again', async () => {
      const { id } = await endpoint(['pet.created'])
      receiver.answerWith((n) => (n === 1 ? { status: 200, delayMs: 1_000 } : { status: 200 }))
      const impatient = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false, timeoutMs: 200 })
      try {
        await newPet()
        await impatient.pollNow()
        clock.advance(6_000)
        await impatient.pollNow()
      } finally {
        await impatient.close()
      }
      const attempts = (await server.request<{ responseStatus: number | null; error: string | null }[]>(`/v1/webhook-endpoints/${id}/deliveries`, { key })).body
      assert.deepEqual(
        attempts.map((a) => [a.responseStatus, a.error]),
        [
          [200, null],
          [null, 'no answer within 0.2 s'],
        ],
      )
    })

    it('disables an endpoint that has failed for 5 days without a success, saying so', async () => {
      const { id } = await endpoint(['pet.created'])
      receiver.answerWith(() => ({ status: 500 }))
      await newPet()
      await dispatcher.pollNow()
      assert.equal((await server.request<{ status: string }>(`/v1/webhook-endpoints/${id}`, { key })).body.status, 'enabled', 'one failure is not five days')
      clock.advance(5 * 86_400_000)
      await newPet()
      await dispatcher.pollNow()
      assert.equal((await server.request<{ status: string }>(`/v1/webhook-endpoints/${id}`, { key })).body.status, 'disabled')
      const [disabled] = await events(key, '?type=webhook_endpoint.disabled&limit=1')
      assert.match((disabled!.data as { reason: string }).reason, /5 days/)
    })

    it('refuses a description or URL no store keeps as sent (a NUL, a lone surrogate) with 400', async () => {
      const made = await endpoint(['*'])
      for (const description of ['\u0000', 'x\udfff']) {
        assert.equal((await post('/v1/webhook-endpoints', { url: receiver.url, enabledEvents: ['*'], description })).status, 400)
        const res = await server.request(`/v1/webhook-endpoints/${made.id}`, { method: 'PATCH', key, json: { description } })
        assert.equal(res.status, 400, res.text)
      }
      assert.equal((await post('/v1/webhook-endpoints', { url: `${receiver.url}\u0000`, enabledEvents: ['*'] })).status, 400)
    })

    it('keeps an endpoint private to the key that made it', async () => {
      const { id } = await endpoint(['pet.created'])
      assert.equal((await server.request(`/v1/webhook-endpoints/${id}`, { key: other })).status, 404)
      assert.deepEqual((await server.request('/v1/webhook-endpoints', { key: other })).body, [])
      assert.equal((await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key: other })).status, 404)
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it("shows a key the events whose data it may read, and lets it subscribe an endpoint to those alone (403 insufficient_scope naming the scope)", async () => {
      const made = await endpoint(['*'])
      await server.request(`/v1/webhook-endpoints/${made.id}/test`, { method: 'POST', key })
      const pet = await newPet()
      await post('/v1/store/orders', { petId: pet.id })
      const accountId = await server.accountId(key)
      const keyWith = (scopes: Scope[]) => server.createKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 }, { scopes, accountId })
      const eventsOnly = await keyWith(['events:read'])
      const petReader = await keyWith(['events:read', 'pets:read'])
      const typesSeen = async (as: string) => new Set((await events(as, '?limit=100')).map((event) => event.type))
      assert.deepEqual([...(await typesSeen(eventsOnly))], [], 'events:read alone shows no data')
      assert.deepEqual([...(await typesSeen(petReader))].sort(), ['pet.created', 'pet.updated'])
      const all = await typesSeen(key)
      for (const type of ['pet.created', 'order.placed', 'webhook_endpoint.test']) assert.ok(all.has(type), type)
      const asked = await server.request<{ code: string; message: string }>('/v1/events?type=order.placed', { key: petReader })
      assert.equal(asked.status, 403)
      assert.equal(asked.body.code, 'insufficient_scope')
      assert.match(asked.body.message, /lacks the orders:read scope to read order\.placed events/)
      assert.equal(asked.headers.get('www-authenticate'), 'Bearer realm="petstore", error="insufficient_scope", scope="orders:read"')

      const hooker = await keyWith(['webhooks:write', 'pets:read'])
      const subscribe = (enabledEvents: string[]) => post<{ id: number; message: string }>('/v1/webhook-endpoints', { url: receiver.url, enabledEvents }, hooker)
      const orders = await subscribe(['pet.created', 'order.placed'])
      assert.equal(orders.status, 403)
      assert.match(orders.body.message, /lacks the orders:read scope to subscribe an endpoint to order\.placed events/)
      const every = await subscribe(['*'])
      assert.equal(every.status, 403, 'every type: every read scope')
      assert.match(every.body.message, /lacks the categories:read, orders:read scopes to subscribe an endpoint to every event type \(\*\)/, 'each scope missing, at once')
      assert.equal(every.headers.get('www-authenticate'), 'Bearer realm="petstore", error="insufficient_scope", scope="categories:read orders:read"')
      const pets = await subscribe(['pet.created'])
      assert.equal(pets.status, 201)
      assert.equal((await server.request(`/v1/webhook-endpoints/${pets.body.id}`, { method: 'PATCH', key: hooker, json: { enabledEvents: ['category.created'] } })).status, 403)
      for (const id of [made.id, pets.body.id]) await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('lets a key change, rotate the secret of, delete or redeliver to an endpoint only when it may read every type the endpoint takes (the target is authorised, not only the new values)', async () => {
      const owners = await endpoint(['order.placed'])
      await newPet().then((pet) => post('/v1/store/orders', { petId: pet.id }))
      const orderEvent = (await events(key, '?type=order.placed&limit=1'))[0]!
      await dispatcher.pollNow()
      assert.ok(receiver.received.some((request) => (JSON.parse(request.body) as Event).id === orderEvent.id), 'the order event, as placed')
      receiver.received.length = 0
      const accountId = await server.accountId(key)
      const hooker = await server.createKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 }, { scopes: ['webhooks:write', 'webhooks:read', 'pets:read'], accountId })
      const patch = (json: unknown) => server.request<{ code: string; message: string; url: string }>(`/v1/webhook-endpoints/${owners.id}`, { method: 'PATCH', key: hooker, json })

      // Pointed elsewhere, re-subscribed first, or its secret in hand (which signs what the receiver trusts, whatever the type), it would get or forge order events.
      const moved = await patch({ url: `${receiver.url}/elsewhere` })
      assert.deepEqual([moved.status, moved.body.code], [403, 'insufficient_scope'])
      assert.match(moved.body.message, /lacks the orders:read scope to change, rotate the secret of, or delete an endpoint subscribed to order\.placed events/)
      for (const json of [{ enabledEvents: ['pet.created'] }, { url: `${receiver.url}/elsewhere`, enabledEvents: ['pet.created'] }, { enabled: false }, { description: 'renamed' }]) {
        assert.equal((await patch(json)).status, 403, JSON.stringify(json))
      }
      const rotate = (as: string) => server.request<{ code: string; secret?: string }>(`/v1/webhook-endpoints/${owners.id}/rotate-secret`, { method: 'POST', key: as, json: {} })
      const rotated = await rotate(hooker)
      assert.deepEqual([rotated.status, rotated.body.code, rotated.body.secret], [403, 'insufficient_scope', undefined])
      assert.equal((await server.request(`/v1/webhook-endpoints/${owners.id}`, { method: 'DELETE', key: hooker })).status, 403)
      const stands = (await server.request<{ url: string; status: string; enabledEvents: string[]; description: string }>(`/v1/webhook-endpoints/${owners.id}`, { key })).body
      assert.deepEqual([stands.url, stands.status, stands.enabledEvents, stands.description], [receiver.url, 'enabled', ['order.placed'], ''], 'the refused changes changed nothing')
      assert.match((await rotate(key)).body.secret ?? '', /^whsec_/, 'a key that may read it may')

      const redeliver = (as: string) => server.request<{ code: string; deliveries: number }>(`/v1/events/${orderEvent.id}/redeliver`, { method: 'POST', key: as })
      const hidden = await redeliver(hooker)
      assert.equal(hidden.status, 404, 'an event the key may not read is not told apart from one that does not exist')
      assert.equal(hidden.body.code, 'not_found')
      await dispatcher.pollNow()
      assert.equal(receiver.received.length, 0, 'nothing was queued')
      const allowed = await redeliver(key)
      assert.deepEqual([allowed.status, allowed.body.deliveries], [202, 1])
      // Queued, then the endpoint unsubscribed from order events before it was claimed: the redelivery goes nowhere, as a retry would not.
      assert.equal((await server.request(`/v1/webhook-endpoints/${owners.id}`, { method: 'PATCH', key, json: { url: `${receiver.url}/elsewhere`, enabledEvents: ['pet.created'] } })).status, 200)
      await dispatcher.pollNow()
      assert.deepEqual(receiver.received.map((request) => (JSON.parse(request.body) as Event).type), [], 'the queued redelivery of an order event went nowhere')
      const [attempt] = (await server.request<{ error: string | null }[]>(`/v1/webhook-endpoints/${owners.id}/deliveries`, { key })).body
      assert.equal(attempt?.error, 'not sent: the endpoint no longer takes order.placed events')

      // Its own endpoint's create, replayed after another key subscribed it to order events: no secret.
      const headers = { 'idempotency-key': `hooked-${store}` }
      const own = await server.request<{ id: number; secret: string }>('/v1/webhook-endpoints', { method: 'POST', key: hooker, headers, json: { url: receiver.url, enabledEvents: ['pet.created'] } })
      assert.equal(own.status, 201)
      assert.equal((await server.request(`/v1/webhook-endpoints/${own.body.id}`, { method: 'PATCH', key, json: { enabledEvents: ['pet.created', 'order.placed'] } })).status, 200)
      const replayed = await server.request<{ code: string; secret?: string }>('/v1/webhook-endpoints', { method: 'POST', key: hooker, headers, json: { url: receiver.url, enabledEvents: ['pet.created'] } })
      assert.deepEqual([replayed.status, replayed.body.code, replayed.body.secret], [403, 'insufficient_scope', undefined])
      for (const id of [owners.id, own.body.id]) await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('says of a name that has no public address the same, whether it does not resolve or resolves to a private address, and never the address', async () => {
      const strict = await startTestServer({ store: 'sqlite' })
      try {
        const strictKey = await strict.createKey()
        const messages = await Promise.all(
          ['http://localhost:4000/x', 'http://nowhere.invalid/x'].map(async (url) => (await strict.request<{ code: string; message: string }>('/v1/webhook-endpoints', { method: 'POST', key: strictKey, json: { url, enabledEvents: ['*'] } })).body),
        )
        for (const body of messages) {
          assert.equal(body.code, 'invalid_field')
          assert.equal(body.message, "url's host has no public address: it does not resolve, or resolves to an address that is not public (an operator can allow a range with PETSTORE_WEBHOOK_ALLOW_CIDRS).")
        }
      } finally {
        await strict.close()
      }
    })

    it('authorises a change again when the subscription changed between its read and its write (while the URL was looked up)', async () => {
      const { id } = await endpoint(['pet.created'])
      const accountId = await server.accountId(key)
      const real = server.store.webhookEndpoints
      let raced = false
      // Another request subscribes the endpoint to order events just before this change's write.
      const racing: typeof real = {
        ...real,
        updateEndpoint: async (...args) => {
          if (!raced) {
            raced = true
            await real.updateEndpoint(accountId, id, { enabledEvents: 'order.placed pet.created' })
          }
          return real.updateEndpoint(...args)
        },
      }
      const admin = createWebhookAdmin({ endpoints: racing, clock, allowHttp: true, allowed: LOOPBACK, maxEndpoints: 16, secrets: server.secrets, wake: () => {} })
      const seen: string[][] = []
      const noOrders = (current: { enabledEvents: string[] }) => {
        seen.push(current.enabledEvents)
        if (current.enabledEvents.some((type) => type.startsWith('order.'))) throw new Error('may not read order events')
      }
      await assert.rejects(admin.update(accountId, id, { url: `${receiver.url}/elsewhere` }, noOrders), /may not read order events/)
      assert.deepEqual(seen, [['pet.created'], ['order.placed', 'pet.created']], 'authorised as read, then again as changed')
      assert.equal((await real.endpoint(accountId, id))!.url, receiver.url, 'not pointed elsewhere')
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('refuses an endpoint beyond the limit, or a change of another account\'s endpoint, before it looks the URL up', async () => {
      // A name that cannot resolve (RFC 6761): looked up, it would be refused 400 invalid_field instead.
      const unresolvable = 'http://nowhere.invalid/hook'
      const limited = await startTestServer({ store, env: { PETSTORE_WEBHOOK_MAX_ENDPOINTS: '1', PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } })
      try {
        const limitedKey = await limited.createKey()
        const make = (url: string) => limited.request<{ code: string; id: number }>('/v1/webhook-endpoints', { method: 'POST', key: limitedKey, json: { url, enabledEvents: ['pet.created'] } })
        assert.equal((await make(unresolvable)).body.code, 'invalid_field', 'looked up while there is room')
        const first = await make(receiver.url)
        assert.equal(first.status, 201)
        const beyond = await make(unresolvable)
        assert.deepEqual([beyond.status, beyond.body.code], [409, 'endpoint_limit_reached'])
      } finally {
        await limited.close()
      }
      const theirs = await endpoint(['pet.created'])
      const change = await server.request<{ code: string }>(`/v1/webhook-endpoints/${theirs.id}`, { method: 'PATCH', key: other, json: { url: unresolvable } })
      assert.deepEqual([change.status, change.body.code], [404, 'not_found'])
      await server.request(`/v1/webhook-endpoints/${theirs.id}`, { method: 'DELETE', key })
    })

    it('refuses a loopback URL at creation without an allowlist, and at delivery', async () => {
      const strict = await startTestServer({ store: 'sqlite' })
      try {
        const strictKey = await strict.createKey()
        const embedding = ['[::127.0.0.1]', '[::169.254.169.254]', '[::10.0.0.1]', '[::ffff:0:7f00:1]', '[64:ff9b::169.254.169.254]', '[2002:7f00:1::1]', '[2001:0:7f00:1::1]']
        for (const url of [receiver.url, 'http://[::ffff:127.0.0.1]:9/x', 'http://10.0.0.1/x', 'http://169.254.169.254/latest', 'ftp://example.com/x', ...embedding.map((host) => `http://${host}/x`)]) {
          const res = await strict.request('/v1/webhook-endpoints', { method: 'POST', key: strictKey, json: { url, enabledEvents: ['*'] } })
          assert.equal(res.status, 400, url)
          assert.equal((res.body as { code: string }).code, 'invalid_field')
        }
      } finally {
        await strict.close()
      }
      // An endpoint already stored (made while the allowlist allowed it) is refused when sent to.
      // A literal address is checked before connecting; a name, in the lookup the connection makes (localhost: /etc/hosts, no DNS).
      const accountId = await server.accountId(key)
      const byName = new URL(receiver.url)
      byName.hostname = 'localhost'
      const stored = await Promise.all(
        [receiver.url, byName.href, 'http://nowhere.invalid/x'].map(async (url) => (await server.store.webhookEndpoints.insertEndpoint({ accountId, url, description: '', enabledEvents: 'pet.created', secret: 'whsec_c2VjcmV0' }, clock.now()))!),
      )
      const guarded = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: [], pollMs: 3_600_000, schedule: SCHEDULE, listen: false })
      await newPet()
      await guarded.pollNow()
      await guarded.close()
      assert.equal(receiver.received.length, 0)
      const [literal] = await server.store.webhookEndpoints.attempts(stored[0]!.id, 1)
      assert.match(literal!.error ?? '', /refused: 127\.0\.0\.1 is a loopback address/)
      const [named] = await server.store.webhookEndpoints.attempts(stored[1]!.id, 1)
      assert.equal(named!.error, 'refused: localhost has no public address: it does not resolve, or resolves to an address that is not public')
      // A name that does not resolve is told in the same words: a tenant learns nothing of which names the server's resolver knows.
      const [unknown] = await server.store.webhookEndpoints.attempts(stored[2]!.id, 1)
      assert.equal(unknown!.error, 'refused: nowhere.invalid has no public address: it does not resolve, or resolves to an address that is not public')
      for (const { id } of stored) await server.store.webhookEndpoints.deleteEndpoint(accountId, id)
    })

    it('allows an address on one port alone, at creation and at delivery', async () => {
      const port = Number(new URL(receiver.url).port)
      const narrow = await startTestServer({ store, env: { PETSTORE_WEBHOOK_ALLOW_CIDRS: `127.0.0.1:${port},[::1]:${port}` } })
      try {
        const narrowKey = await narrow.createKey('enterprise', { perMinute: 1_000, perDay: 10_000 })
        const make = (url: string) => narrow.request<{ id: number; code: string; message: string }>('/v1/webhook-endpoints', { method: 'POST', key: narrowKey, json: { url, enabledEvents: ['pet.created'] } })
        assert.equal((await make(receiver.url)).status, 201)
        assert.equal((await make(`http://[::1]:${port}/x`)).status, 201, 'an IPv6 address allowed on its port')
        for (const url of ['http://127.0.0.1:6379/x', `http://127.0.0.2:${port}/x`, 'http://[::1]:6379/x']) {
          const refused = await make(url)
          assert.equal(refused.status, 400, url)
          assert.equal(refused.body.code, 'invalid_field')
          assert.match(refused.body.message, /^url's address is not public: .* is a loopback address/, url)
        }
        // Stored while a wider allowance held: the dispatcher, allowed the receiver's port alone, refuses another port (a literal, and a name).
        const accountId = await narrow.accountId(narrowKey)
        const elsewhere = await Promise.all(
          ['http://127.0.0.1:6379/x', 'http://localhost:6379/x'].map(async (url) => (await narrow.store.webhookEndpoints.insertEndpoint({ accountId, url, description: '', enabledEvents: 'pet.created', secret: 'whsec_c2VjcmV0' }, clock.now()))!),
        )
        const portBound = startDispatcher({ deliveries: narrow.store.deliveries, secrets: narrow.secrets, clock, allowed: parseCidrs([`127.0.0.1:${port}`, `[::1]:${port}`]), pollMs: 3_600_000, schedule: SCHEDULE, listen: false })
        await narrow.request('/v1/pets', { method: 'POST', key: narrowKey, json: { name: 'Ported', categoryId: 1 } })
        await portBound.pollNow()
        await portBound.close()
        assert.equal(receiver.received.length, 1, 'the allowed port is sent to')
        const [literal, named] = await Promise.all(elsewhere.map(async ({ id }) => (await narrow.store.webhookEndpoints.attempts(id, 1))[0]!.error))
        assert.equal(literal, 'refused: 127.0.0.1 is a loopback address', 'an address the tenant wrote is named')
        assert.equal(named, 'refused: localhost has no public address: it does not resolve, or resolves to an address that is not public', 'the address a name leads to is not')
      } finally {
        await narrow.close()
      }
    })

    it('refuses a URL longer than 2,048 characters once normalised', async () => {
      const url = `https://93.184.215.14/${'é'.repeat(2_023)}`
      assert.ok(url.length <= 2_048, 'within the schema as sent')
      const res = await post<{ code: string; message: string }>('/v1/webhook-endpoints', { url, enabledEvents: ['*'] })
      assert.equal(res.status, 400)
      assert.equal(res.body.code, 'invalid_field')
      assert.match(res.body.message, /12,?160 characters once normalised/)
      const made = await endpoint(['*'])
      assert.equal((await server.request(`/v1/webhook-endpoints/${made.id}`, { method: 'PATCH', key, json: { url } })).status, 400)
    })

    it('refuses a URL on port 0, which no request can reach', async () => {
      const res = await post<{ code: string; message: string }>('/v1/webhook-endpoints', { url: 'https://93.184.215.14:0/hook', enabledEvents: ['*'] })
      assert.equal(res.status, 400)
      assert.match(res.body.message, /port 0/)
      const made = await endpoint(['*'])
      assert.equal((await server.request(`/v1/webhook-endpoints/${made.id}`, { method: 'PATCH', key, json: { url: 'https://93.184.215.14:0/' } })).status, 400)
    })

    it('delivers each event once with two dispatchers, and takes over one whose dispatcher died holding it', async () => {
      const { id } = await endpoint(['pet.created'])
      const second = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false })
      for (let i = 0; i < 10; i++) await newPet()
      await Promise.all([dispatcher.pollNow(), second.pollNow(), dispatcher.pollNow(), second.pollNow()])
      const ids = receiver.received.map((r) => r.headers['webhook-id'])
      assert.equal(ids.length, 10)
      assert.equal(new Set(ids).size, 10, 'no event twice')
      // A dispatcher that claims and dies: nothing is recorded, the lease runs out, another sends it.
      receiver.received.length = 0
      await newPet()
      await server.store.deliveries.fanOut(clock.now(), 100)
      const [held] = await server.store.deliveries.claimDue(clock.now(), 60_000, 10)
      assert.ok(held)
      await second.pollNow()
      assert.equal(receiver.received.length, 0, 'held by the dead dispatcher')
      clock.advance(60_001)
      await second.pollNow()
      assert.equal(receiver.received.length, 1)
      assert.deepEqual(await server.store.deliveries.recordAttempts([{ deliveryId: held.id, leaseUntil: held.leaseUntil, trigger: 'scheduled', at: clock.now(), durationMs: 1, responseStatus: 200, error: null, outcome: { status: 'delivered' } }]), [false], 'the dead one\'s lease is no longer good')
      await second.close()
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it("takes fan-out and claims in turn: a backlog's first deliveries go out before the rest of it is fanned out", async () => {
      const { id } = await endpoint(['pet.created'])
      await backlog(600) // more than one fan-out batch (500)
      // The real queue, its calls noted in order.
      const calls: string[] = []
      const real = server.store.deliveries
      const noted: typeof real = {
        ...real,
        fanOut: (now, limit) => (calls.push('fanOut'), real.fanOut(now, limit)),
        claimDue: (now, leaseMs, limit, perEndpoint) => (calls.push('claimDue'), real.claimDue(now, leaseMs, limit, perEndpoint)),
      }
      const alternating = startDispatcher({ deliveries: noted, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false, perEndpoint: 20 })
      try {
        await alternating.pollNow()
      } finally {
        await alternating.close()
      }
      assert.deepEqual(calls.slice(0, 3), ['fanOut', 'claimDue', 'fanOut'], 'a claim between the first fan-out batch and the second')
      assert.equal(receiver.received.length, 600)
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it("sends an endpoint's next deliveries while the attempts before them are still being recorded, never more than perEndpoint at once", async () => {
      // A receiver that counts the requests under way at once, answering each after 5 ms.
      let open = 0
      let most = 0
      let answered = 0
      const counting = createServer((req, res) => {
        open++
        most = Math.max(most, open)
        req.resume()
        req.on('end', () =>
          setTimeout(() => {
            open--
            answered++
            res.writeHead(204).end()
          }, 5),
        )
      })
      await new Promise<void>((resolve) => counting.listen(0, '127.0.0.1', resolve))
      const { id } = (await post<{ id: number }>('/v1/webhook-endpoints', { url: `http://127.0.0.1:${(counting.address() as AddressInfo).port}/hook`, enabledEvents: ['pet.created'] })).body
      await backlog(60)
      // Every write of attempts takes 200 ms: with a claim only as leases come back, 2 at a
      // time, 60 deliveries would take some 30 writes, one after the other.
      let writes = 0
      const real = server.store.deliveries
      const slowly =
        <A extends unknown[], R>(write: (...args: A) => Promise<R>) =>
        async (...args: A): Promise<R> => {
          await new Promise((resolve) => setTimeout(resolve, 200))
          writes++
          return write(...args)
        }
      const slowed: typeof real = { ...real, recordAttempts: slowly(real.recordAttempts), recordAndClaim: slowly(real.recordAndClaim) }
      const ahead = startDispatcher({ deliveries: slowed, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false, perEndpoint: 2 })
      try {
        await ahead.pollNow()
      } finally {
        await ahead.close()
        await new Promise((resolve) => counting.close(resolve))
      }
      assert.equal(answered, 60)
      assert.ok(most <= 2, `at most perEndpoint (2) under way at once (${most})`)
      assert.ok(writes <= 12, `the deliveries claimed ahead went out while the writes before them were under way (${writes} writes)`)
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('gives back what it claimed ahead for an endpoint once one of its requests has been open for a second', async () => {
      const { id } = await endpoint(['pet.created'])
      // Two quick answers (the endpoint answers quickly: deliveries are claimed ahead), then 2.5 s each.
      receiver.answerWith((n) => (n <= 2 ? { status: 200 } : { status: 200, delayMs: 2_500 }))
      await backlog(20)
      const raw = openDatabase(server.config.databaseUrl)
      const leased = async () =>
        Number((await raw.db.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll().as('n')).where('endpoint_id', '=', id).where('lease_until', 'is not', null).executeTakeFirstOrThrow()).n)
      const slowing = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 200, schedule: SCHEDULE, listen: false, perEndpoint: 1 })
      try {
        for (let i = 0; i < 100 && receiver.received.length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 20))
        assert.equal(receiver.received.length, 3, 'the third request is under way')
        assert.ok((await leased()) > 1, 'deliveries claimed ahead while it answered quickly')
        let left = await leased()
        for (let i = 0; i < 40 && left > 1; i++) {
          await new Promise((resolve) => setTimeout(resolve, 50))
          left = await leased()
        }
        assert.equal(left, 1, 'within 2 s, only the request under way keeps its lease')
        assert.equal(receiver.received.length, 3, 'and nothing more was sent meanwhile')
      } finally {
        await slowing.close()
        await raw.db.destroy()
      }
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('sends nothing it held back to an endpoint disabled, deleted or pointed elsewhere since the claim, beyond the requests under way', async () => {
      for (const change of ['disable', 'move', 'delete', 'disable, told'] as const) {
        const { id } = await endpoint(['pet.created'])
        receiver.answerWith(() => ({ status: 200, delayMs: 20 }))
        const from = receiver.received.length
        await backlog(60)
        // Its own dispatcher, as `petstore dispatch` or another instance runs one: not told of the change, it reads the endpoint again.
        // Told (as the API's own process tells its dispatcher), it reads it again at once: the timed reading is put off for the test.
        const holding = startDispatcher({
          deliveries: server.store.deliveries,
          secrets: server.secrets,
          clock,
          allowed: LOOPBACK,
          pollMs: 3_600_000,
          schedule: SCHEDULE,
          listen: false,
          perEndpoint: 1,
          ...(change === 'disable, told' ? { rereadAfterMs: 3_600_000 } : {}),
        })
        try {
          holding.wake()
          for (let i = 0; i < 200 && receiver.received.length - from < 5; i++) await new Promise((resolve) => setTimeout(resolve, 10))
          const changed =
            change === 'delete'
              ? await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
              : await server.request(`/v1/webhook-endpoints/${id}`, { method: 'PATCH', key, json: change === 'move' ? { url: `${receiver.url}?moved` } : { enabled: false } })
          assert.ok(changed.status < 300, changed.text)
          // The API's process tells its own dispatcher (server.ts): nothing held back goes after that.
          if (change === 'disable, told') holding.endpointChanged(id)
          const answeredAt = receiver.received.length
          await holding.pollNow()
          const after = receiver.received.slice(answeredAt)
          const old = after.filter(({ url }) => url === '/hook').length
          // One request under way (perEndpoint 1), and those started within REREAD_AFTER_MS of their claim's read (20 ms each).
          const most = change === 'disable, told' ? 2 : 1 + Math.ceil(REREAD_AFTER_MS / 20) + 1
          assert.ok(old <= most, `${change}: ${old} sent to the old target after the answer (of ${60 - (answeredAt - from)} held or due; at most ${most})`)
          if (change === 'move') assert.equal(after.length - old, 60 - (answeredAt - from) - old, 'the rest went to the new URL')
        } finally {
          await holding.close()
        }
        if (change !== 'delete') await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
      }
    })

    it('gives back, rather than sends, a delivery held back until less than an attempt\'s time is left under its lease', async () => {
      const { id } = await endpoint(['pet.created'])
      // The third request takes 500 ms; while it is under way, 50 of the leases' 60 s go by (the 15 s an attempt may take no longer fit).
      receiver.answerWith((n) => (n === 3 ? { status: 200, delayMs: 500 } : { status: 200 }))
      await backlog(20)
      let given = 0
      const real = server.store.deliveries
      const counted: typeof real = { ...real, release: (deliveryId, leaseUntil) => (given++, real.release(deliveryId, leaseUntil)) }
      const holding = startDispatcher({ deliveries: counted, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false, perEndpoint: 1 })
      try {
        const polled = holding.pollNow()
        for (let i = 0; i < 100 && receiver.received.length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 10))
        assert.equal(receiver.received.length, 3, 'the third request is under way')
        clock.advance(50_000)
        await polled
      } finally {
        await holding.close()
      }
      assert.ok(given > 0, 'the deliveries held back behind the third were given back')
      assert.equal(receiver.received.length, 20, 'and claimed again, with a lease of their own, and sent')
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('sends while it fans out a large backlog: the fan-out never holds the event loop (SQLite statements are synchronous)', async () => {
      const { id } = await endpoint(['pet.created'])
      await backlog(3_000) // six fan-out batches
      /** How many deliveries the receiver had answered as each fan-out batch began. */
      const answeredAt: number[] = []
      let fannedOut!: () => void
      const done = new Promise<void>((resolve) => (fannedOut = resolve))
      const real = server.store.deliveries
      const noted: typeof real = {
        ...real,
        fanOut: async (now, limit) => {
          answeredAt.push(receiver.received.length)
          const taken = await real.fanOut(now, limit)
          if (taken.events < limit) fannedOut()
          return taken
        },
      }
      const fanning = startDispatcher({ deliveries: noted, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false })
      try {
        fanning.wake()
        await done
      } finally {
        await fanning.close()
      }
      assert.ok(answeredAt.length >= 6, `${answeredAt.length} fan-out batches`)
      assert.ok(answeredAt.at(-1)! > 0, `deliveries answered before the last fan-out batch began (${answeredAt.join(', ')})`)
      await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
    })

    it('gives way while the requests keep its process busy: one batch a poll, no wake-ups, then the whole backlog', async () => {
      const { id } = await endpoint(['pet.created'])
      for (let i = 0; i < 45; i++) await newPet()
      let busy = true
      // One endpoint may have a whole batch in flight here: this is about giving way, not isolation.
      const giving = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false, perEndpoint: 20, busy: () => busy })
      try {
        await giving.pollNow()
        assert.equal(receiver.received.length, 20, 'one batch while busy')
        giving.wake() // as a NOTIFY or a test event would, right after a poll
        await new Promise((resolve) => setTimeout(resolve, 300))
        assert.equal(receiver.received.length, 20, 'no wake-up between polls while busy')
        busy = false
        giving.wake()
        for (let i = 0; i < 100 && receiver.received.length < 45; i++) await new Promise((resolve) => setTimeout(resolve, 50))
        assert.equal(receiver.received.length, 45, 'the rest at once when the requests slacken')
        assert.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, 45, 'each event once')
      } finally {
        await giving.close()
        await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
      }
    })

    it('remembers an endpoint that answered quickly after its last delivery here ended: the next claim takes ahead for it at once', async () => {
      const { id } = await endpoint(['pet.created'])
      const real = server.store.deliveries
      const sizes: number[] = []
      const counted: typeof real = {
        ...real,
        claimDue: async (...args) => {
          const claimed = await real.claimDue(...args)
          sizes.push(claimed.length)
          return claimed
        },
        recordAndClaim: async (...args) => {
          const answer = await real.recordAndClaim(...args)
          sizes.push(answer.claimed.length)
          return answer
        },
      }
      const quick = startDispatcher({ deliveries: counted, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false, perEndpoint: 1 })
      try {
        await newPet()
        await quick.pollNow()
        assert.equal(receiver.received.length, 1, 'answered quickly; nothing of it is held here any more')
        sizes.length = 0
        await backlog(100)
        await quick.pollNow()
        assert.equal(receiver.received.length, 101)
        assert.equal(sizes[0], 64, `its first claim: a whole batch (1 under way, the rest held ahead), not 1 as for an endpoint never heard from (${sizes.join(', ')})`)
      } finally {
        await quick.close()
        await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
      }
    })

    it("measures its lag by the best-served endpoint: one too slow for what it is sent (under a second an answer) lags alone", async () => {
      // 500 ms an answer, 8 at a time: 16 a second, for 120 events 30 s old; the other endpoint takes them at once.
      const slowServer = createServer((req, res) => {
        req.resume()
        req.on('end', () => setTimeout(() => res.writeHead(204).end(), 500))
      })
      await new Promise<void>((resolve) => slowServer.listen(0, '127.0.0.1', resolve))
      const quickEndpoint = await endpoint(['pet.created'])
      const slowEndpoint = (await post<{ id: number }>('/v1/webhook-endpoints', { url: `http://127.0.0.1:${(slowServer.address() as AddressInfo).port}/`, enabledEvents: ['pet.created'] })).body
      await backlog(120)
      clock.advance(30_000)
      const dispatching = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false })
      try {
        dispatching.wake()
        const started = performance.now()
        while (receiver.received.length < 120 && performance.now() - started < 5_000) await new Promise((resolve) => setTimeout(resolve, 20))
        assert.equal(receiver.received.length, 120, 'the quick endpoint has all of its events')
        // New events: the quick endpoint is claimed for them as they come, the slow one is still 30 s behind.
        await backlog(5)
        dispatching.wake()
        while (receiver.received.length < 125 && performance.now() - started < 8_000) await new Promise((resolve) => setTimeout(resolve, 20))
        assert.equal(receiver.received.length, 125)
        assert.equal(dispatching.lagMs, 0, 'caught up for the endpoint that keeps up; the slow one is 30 s behind on its own')
      } finally {
        await dispatching.close()
        await new Promise<void>((resolve) => slowServer.close(() => resolve()))
        for (const { id } of [quickEndpoint, slowEndpoint]) await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
      }
    })

    it("leaves out of its lag an endpoint with all its requests under way while it has time to spare, or while they take far longer than its event loop runs late: one tenant's slow receiver, alone, paces nobody's writes", async () => {
      // 900 ms an answer (under the second from which it is seen slow), 8 at a time: 9 a second, for 120 events 30 s old, and no other endpoint.
      const slowServer = createServer((req, res) => {
        req.resume()
        req.on('end', () => setTimeout(() => res.writeHead(204).end(), 900))
      })
      await new Promise<void>((resolve) => slowServer.listen(0, '127.0.0.1', resolve))
      const slowEndpoint = (await post<{ id: number }>('/v1/webhook-endpoints', { url: `http://127.0.0.1:${(slowServer.address() as AddressInfo).port}/`, enabledEvents: ['pet.created'] })).body
      await backlog(120)
      clock.advance(30_000)
      /** Its lag once its first 8 are under way, and then `openMs` more. */
      const lagWhileSending = async (options: { spareTime?: () => boolean; loopDelayMs?: () => number } = {}, openMs = 0) => {
        const dispatching = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false, ...options })
        try {
          dispatching.wake()
          const started = performance.now()
          // Its first 8 under way (an endpoint never heard from gets no more until it answers).
          while (dispatching.inFlight < 8 && performance.now() - started < 3_000) await new Promise((resolve) => setTimeout(resolve, 10))
          assert.equal(dispatching.inFlight, 8)
          await new Promise((resolve) => setTimeout(resolve, openMs))
          assert.equal(dispatching.inFlight, 8, 'none answered yet')
          return dispatching.lagMs
        } finally {
          await dispatching.close()
        }
      }
      try {
        assert.equal(await lagWhileSending(), 0, 'its 8 under way, the process idle: the receiver is what holds it back')
        const counted = await lagWhileSending({ spareTime: () => false, loopDelayMs: () => 5 })
        assert.ok(counted !== undefined && counted >= 29_000, `a process with no time to spare counts it while its requests are young (${counted} ms): then the dispatcher may be what is behind`)
        // Busy, but its event loop runs 5 ms late, and the requests have been open 300 ms: the receiver's doing.
        assert.equal(await lagWhileSending({ spareTime: () => false, loopDelayMs: () => 5 }, 300), 0, 'requests open far longer than the loop runs late: the receiver holds it back')
        const late = await lagWhileSending({ spareTime: () => false, loopDelayMs: () => 100 }, 300)
        assert.ok(late !== undefined && late >= 29_000, `with the loop 100 ms late, 300 ms may be this process's own doing: counted (${late} ms)`)
      } finally {
        await new Promise<void>((resolve) => slowServer.close(() => resolve()))
        await server.request(`/v1/webhook-endpoints/${slowEndpoint.id}`, { method: 'DELETE', key })
      }
    })

    it('is 0 behind once what it claimed is delivered, however long the service then stays idle', async () => {
      const { id } = await endpoint(['pet.created'])
      await backlog(5)
      clock.advance(2_000)
      const idle = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false })
      try {
        await idle.pollNow()
        assert.equal(receiver.received.length, 5)
        // Nothing is waiting: an idle service is not behind (it read 2 s, then 10, and its writes were paced).
        clock.advance(8_000)
        assert.equal(idle.lagMs, 0, 'caught up, seconds after its last delivery')
      } finally {
        await idle.close()
        await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
      }
    })

    it('does not count a retry as lag: a receiver that failed fast, retried seconds later, leaves it 0 behind', async () => {
      const { id } = await endpoint(['pet.created'])
      // 503 at once, then (the retry) after 300 ms, so that the retry is seen under way.
      receiver.answerWith((n) => ({ status: 503, delayMs: n === 1 ? 0 : 300 }))
      await backlog(1)
      const retrying = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false })
      try {
        await retrying.pollNow()
        clock.advance(6_000)
        const polled = retrying.pollNow()
        while (receiver.received.length < 2) await new Promise((resolve) => setTimeout(resolve, 5))
        assert.equal(retrying.inFlight, 1, 'the retry is under way')
        assert.equal(retrying.lagMs, 0, 'its event was sent once already: the endpoint is failing, not the dispatcher behind')
        await polled
      } finally {
        await retrying.close()
        await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
      }
    })

    it('counts in its lag the events it has yet to fan out, though its claims find nothing due', async () => {
      // Subscribed to none of the backlog's events: the claims find nothing, but the fan-out still has them all to look at.
      const { id } = await endpoint(['order.placed'])
      await backlog(1_200)
      const writtenAt = clock.now()
      clock.advance(20_000)
      // Giving way: one fan-out batch of 500 a poll.
      const behind = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false, busy: () => true })
      try {
        assert.equal(behind.lagMs, undefined, 'not known before its first poll')
        await behind.pollNow()
        assert.equal(behind.lagMs, clock.now() - writtenAt, 'the events behind the fan-out are 20 s old')
      } finally {
        await behind.close()
      }
      const caughtUp = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false, perEndpoint: 20 })
      try {
        await caughtUp.pollNow()
        assert.equal(caughtUp.lagMs, 0, 'all fanned out')
      } finally {
        await caughtUp.close()
        await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
      }
    })

    it('leaves out of its lag the endpoints that answer slowly: their backlog is theirs, and paces nobody', async () => {
      const slow = [await endpoint(['pet.created']), await endpoint(['pet.created']), await endpoint(['pet.created'])]
      receiver.answerWith(() => ({ status: 204, delayMs: 1_100 }))
      await backlog(40)
      clock.advance(30_000)
      // 16 sockets: each claim takes 16 of the slow endpoints' deliveries (8 each under way at most).
      const dispatching = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE, listen: false, maxInFlight: 16 })
      try {
        dispatching.wake()
        const started = performance.now()
        while (receiver.received.length < 17 && performance.now() - started < 5_000) await new Promise((resolve) => setTimeout(resolve, 20))
        assert.ok(receiver.received.length > 16, 'the second claim was sent, after the first answers')
        assert.equal(dispatching.lagMs, 0, 'a claim of slow endpoints only: no measure of this dispatcher')
      } finally {
        await dispatching.close()
        for (const { id } of slow) await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
      }
    })

    if (store === 'postgres') {
      it('wakes on the database\'s NOTIFY: a delivery goes out at once, without waiting for a poll', async () => {
        await endpoint(['pet.created'])
        const awake = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE })
        try {
          await new Promise((resolve) => setTimeout(resolve, 200)) // LISTEN is set up
          await newPet()
          for (let i = 0; i < 50 && receiver.received.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
          assert.equal(receiver.received.length, 1, 'delivered within 2.5 s by a dispatcher that polls once an hour')
        } finally {
          await awake.close()
        }
      })

      it('listens again after its LISTEN connection is terminated, and delivers what was written while it was down', async () => {
        await endpoint(['pet.created'])
        const admin = new pg.Client({ connectionString: server.config.databaseUrl })
        await admin.connect()
        const awake = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, schedule: SCHEDULE })
        const listening = async () =>
          (await admin.query<{ pid: number }>("select pid from pg_stat_activity where datname = current_database() and query like 'LISTEN%' and pid <> pg_backend_pid()")).rows.map((row) => row.pid)
        const until = async (what: () => Promise<boolean> | boolean, ms: number) => {
          for (const end = Date.now() + ms; Date.now() < end; await new Promise((resolve) => setTimeout(resolve, 50))) if (await what()) return true
          return what()
        }
        try {
          assert.ok(await until(async () => (await listening()).length === 1, 3_000), 'the dispatcher listens')
          const [pid] = await listening()
          await admin.query('select pg_terminate_backend($1)', [pid])
          await newPet() // while nobody listens: no NOTIFY reaches the dispatcher, which polls once an hour
          assert.ok(await until(() => receiver.received.length === 1, 3_000), 'delivered once the LISTEN connection is back')
          assert.ok(await until(async () => (await listening()).length === 1, 3_000))
          await newPet()
          assert.ok(await until(() => receiver.received.length === 2, 3_000), 'woken by NOTIFY on the new connection')
        } finally {
          await awake.close()
          await admin.end()
        }
      })

      it('lets one committing write at a time NOTIFY (a NOTIFY serializes commits), and delivers the others\' events all the same', async () => {
        await endpoint(['pet.created'])
        const listener = new pg.Client({ connectionString: server.config.databaseUrl })
        const holder = new pg.Client({ connectionString: server.config.databaseUrl })
        await Promise.all([listener.connect(), holder.connect()])
        const heard: string[] = []
        listener.on('notification', (message) => heard.push(message.channel))
        try {
          await listener.query('LISTEN petstore_webhook_deliveries')
          // Another write, committing: it holds the wake-up.
          await holder.query('begin')
          await holder.query("select pg_advisory_xact_lock(hashtext('petstore_webhook_deliveries'))")
          const quiet = await newPet()
          await new Promise((resolve) => setTimeout(resolve, 300))
          assert.deepEqual(heard, [], 'no second NOTIFY beside the one in flight')
          await holder.query('rollback')
          const woken = await newPet()
          for (let i = 0; i < 40 && heard.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
          assert.deepEqual(heard, ['petstore_webhook_deliveries'], 'the next write wakes the dispatchers')
          await dispatcher.pollNow()
          const sent = receiver.received.map((r) => ((JSON.parse(r.body) as Event).data as Pet).id)
          assert.deepEqual(sent.sort(), [quiet.id, woken.id].sort(), 'the quiet write\'s event goes with the next fan-out')
        } finally {
          await Promise.all([listener.end(), holder.end()])
        }
      })

      it('fans each event out once while dispatchers fan out at the same moment', async () => {
        const { id } = await endpoint(['pet.created'])
        const pets = await Promise.all(Array.from({ length: 40 }, () => newPet()))
        const taken = (await Promise.all(Array.from({ length: 4 }, () => server.store.deliveries.fanOut(clock.now(), 500)))).map(({ events }) => events)
        assert.equal(taken.reduce((a, b) => a + b, 0), pets.length, `each event taken by one dispatcher: ${taken.join(', ')}`)
        const claimed = await server.store.deliveries.claimDue(clock.now(), 60_000, 1_000)
        const mine = claimed.filter((delivery) => delivery.endpoint.id === id)
        assert.equal(mine.length, pets.length, 'one delivery per event')
        for (const delivery of claimed) await server.store.deliveries.release(delivery.id, delivery.leaseUntil)
      })

      it('claims past a delivery another dispatcher has locked, without waiting for it (SKIP LOCKED)', async () => {
        await endpoint(['pet.created'])
        await newPet()
        await newPet()
        await server.store.deliveries.fanOut(clock.now(), 100)
        const client = new pg.Client({ connectionString: server.config.databaseUrl })
        await client.connect()
        try {
          await client.query('begin')
          // Another dispatcher, mid-claim: it holds the oldest due delivery's row.
          const { rows } = await client.query<{ id: string }>("select id from webhook_deliveries where status = 'pending' order by next_attempt_at, id limit 1 for update")
          const claimed = await Promise.race([
            server.store.deliveries.claimDue(clock.now(), 60_000, 10),
            new Promise<'blocked'>((resolve) => setTimeout(() => resolve('blocked'), 3_000)),
          ])
          assert.notEqual(claimed, 'blocked', 'the claim waited for the locked row')
          const ids = (claimed as { id: number }[]).map((delivery) => delivery.id)
          assert.ok(ids.length >= 1)
          assert.ok(!ids.includes(Number(rows[0]!.id)), 'the locked delivery is left to its holder')
        } finally {
          await client.query('rollback')
          await client.end()
        }
      })
    }
  })
}
