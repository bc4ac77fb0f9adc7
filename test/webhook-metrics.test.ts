// The webhook queue on GET /metrics, on both stores: the backlog (due and retrying
// deliveries), the age of the oldest work not yet attempted, this instance's attempts
// by outcome, and the latency from an event to its 2xx.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createManualClock } from '../src/clock.js'
import { createMetrics } from '../src/plugins/metrics.js'
import { startDispatcher, type Dispatcher } from '../src/webhooks/dispatcher.js'
import { parseCidrs } from '../src/webhooks/outbound.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

/** A receiver on loopback answering `status` at `/ok` and 503 elsewhere. */
async function startReceiver() {
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(req.url === '/ok' ? 204 : 503).end())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { ok: `${base}/ok`, failing: `${base}/failing`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

for (const store of STORES) {
  describe(`webhook metrics (${store})`, () => {
    // Ahead of the real time: the triggers date events by the database's clock.
    const clock = createManualClock()
    let server: TestServer
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let dispatcher: Dispatcher
    let key: string

    before(async () => {
      clock.set(Date.now() + 5_000)
      const metrics = createMetrics()
      server = await startTestServer({ store, clock, metrics, env: { PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } })
      receiver = await startReceiver()
      dispatcher = startDispatcher({
        deliveries: server.store.deliveries,
        secrets: server.secrets,
        clock,
        allowed: parseCidrs(['127.0.0.0/8']),
        pollMs: 3_600_000,
        schedule: [5_000, 60_000],
        listen: false,
        onAttempt: metrics.observeWebhookAttempt,
      })
      key = await server.createKey('enterprise', { perMinute: 10_000, perDay: 100_000 })
    })
    after(async () => {
      await dispatcher.close()
      await receiver.close()
      await server.close()
    })

    /** The samples of GET /metrics, by name and labels as written (`name{labels}`). */
    async function scrape(): Promise<Map<string, number>> {
      const res = await server.request<string>('/metrics')
      assert.equal(res.status, 200)
      const samples = new Map<string, number>()
      for (const line of res.text.split('\n')) {
        const match = /^(petstore_webhook_\S+) (\S+)$/.exec(line)
        if (match) samples.set(match[1]!, Number(match[2]))
      }
      return samples
    }

    it('shows the backlog and its age, then the attempts by outcome and the latency of the deliveries', async () => {
      const empty = await scrape()
      assert.equal(empty.get('petstore_webhook_deliveries_pending{state="due"}'), 0)
      assert.equal(empty.get('petstore_webhook_oldest_pending_seconds'), 0)
      for (const url of [receiver.ok, receiver.failing]) {
        assert.equal((await server.request('/v1/webhook-endpoints', { method: 'POST', key, json: { url, enabledEvents: ['pet.created'] } })).status, 201)
      }
      for (let i = 0; i < 3; i++) await server.request('/v1/pets', { method: 'POST', key, json: { name: `Counted ${i}`, categoryId: 1 } })
      clock.advance(30_000)

      const waiting = await scrape()
      const age = waiting.get('petstore_webhook_oldest_pending_seconds')!
      // Written 5 s behind the manual clock (the database's time), then 30 s passed.
      assert.ok(age >= 30 && age <= 45, `the oldest event waiting to be fanned out is about 35 s old: ${age}`)
      assert.equal(waiting.get('petstore_webhook_deliveries_pending{state="due"}'), 0, 'not fanned out yet')

      await server.store.deliveries.fanOut(clock.now(), 100)
      const fanned = await scrape()
      assert.equal(fanned.get('petstore_webhook_deliveries_pending{state="due"}'), 6)
      assert.ok(fanned.get('petstore_webhook_oldest_pending_seconds')! >= 30, 'a delivery never attempted is as old as its event')

      await dispatcher.pollNow()
      const sent = await scrape()
      assert.equal(sent.get('petstore_webhook_attempts_total{outcome="delivered"}'), 3)
      assert.equal(sent.get('petstore_webhook_attempts_total{outcome="retrying"}'), 3)
      assert.equal(sent.get('petstore_webhook_deliveries_pending{state="due"}'), 0)
      assert.equal(sent.get('petstore_webhook_deliveries_pending{state="retrying"}'), 3)
      assert.equal(sent.get('petstore_webhook_oldest_pending_seconds'), 0, 'a retry is not a backlog')
      assert.equal(sent.get('petstore_webhook_delivery_latency_seconds_count'), 3)
      assert.equal(sent.get('petstore_webhook_delivery_latency_seconds_bucket{le="10"}'), 0, 'each took about 35 s from its event')
      assert.equal(sent.get('petstore_webhook_delivery_latency_seconds_bucket{le="60"}'), 3)

      // The retries fail again, then for good (a schedule of two steps).
      clock.advance(6_000)
      await dispatcher.pollNow()
      clock.advance(70_000)
      await dispatcher.pollNow()
      const done = await scrape()
      assert.equal(done.get('petstore_webhook_attempts_total{outcome="retrying"}'), 6)
      assert.equal(done.get('petstore_webhook_attempts_total{outcome="failed"}'), 3)
      assert.equal(done.get('petstore_webhook_deliveries_pending{state="retrying"}'), 0)
    })
  })
}
