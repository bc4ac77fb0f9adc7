// Signing secrets at rest, on both stores: the store holds them sealed, no read the API
// makes returns one, deliveries are signed with the secret the caller was given, and a
// main key rotation (the old key kept for opening, then `reseal-secrets`) loses none.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { createManualClock } from '../src/clock.js'
import { startDispatcher } from '../src/webhooks/dispatcher.js'
import { parseCidrs } from '../src/webhooks/outbound.js'
import { resealSecrets } from '../src/secrets/reseal.js'
import { createSecretBox, type SecretBox } from '../src/secrets/secret-box.js'
import { rawRows } from './helpers/raw-rows.js'
import { STORES, TEST_SECRET_KEY, startTestServer, type TestServer } from './helpers/server.js'

const LOOPBACK = parseCidrs(['127.0.0.0/8'])

for (const store of STORES) {
  describe(`webhook signing secrets at rest (${store})`, () => {
    const clock = createManualClock()
    let server: TestServer
    let receiver: Server
    let url: string
    const received: { headers: IncomingHttpHeaders; body: string }[] = []
    let key: string

    before(async () => {
      clock.set(Date.now() + 5_000)
      server = await startTestServer({ store, clock, env: { PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } })
      receiver = createServer((req, res) => {
        let body = ''
        req.on('data', (chunk: Buffer) => (body += chunk.toString()))
        req.on('end', () => {
          received.push({ headers: req.headers, body })
          res.writeHead(204).end()
        })
      })
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
      url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
      key = await server.createKey('enterprise', { perMinute: 10_000, perDay: 100_000 })
    })
    after(async () => {
      await new Promise<void>((resolve) => receiver.close(() => resolve()))
      await server.close()
    })

    /** Sends what is due with a dispatcher opening secrets with `secrets`. */
    async function deliverWith(secrets: SecretBox) {
      const dispatcher = startDispatcher({ deliveries: server.store.deliveries, secrets, clock, allowed: LOOPBACK, pollMs: 3_600_000, listen: false })
      await dispatcher.pollNow()
      await dispatcher.close()
    }
    const newPet = () => server.request('/v1/pets', { method: 'POST', key, json: { name: 'Signed', categoryId: 1 } })
    const verifies = (secret: string) => {
      const last = received.at(-1)!
      new Webhook(secret).verify(last.body, last.headers as Record<string, string>)
    }

    it('stores the secret sealed, returns it from no read, and signs with it', async () => {
      const made = (await server.request<{ id: number; secret: string }>('/v1/webhook-endpoints', { method: 'POST', key, json: { url, enabledEvents: ['pet.created'] } })).body
      const [row] = (await rawRows(server.config.databaseUrl, 'webhook_endpoints')).filter((r) => Number(r.id) === made.id)
      assert.match(String(row!.secret), /^v1\./)
      assert.ok(!String(row!.secret).includes(made.secret.slice('whsec_'.length)), 'the secret is not in the row')
      const read = await server.store.webhookEndpoints.endpoint(await server.accountId(key), made.id)
      assert.ok(read && !('secret' in read) && !('previousSecret' in read), `the store's read has no secret: ${Object.keys(read ?? {}).join(', ')}`)
      assert.ok(!('secret' in (await server.request<object>(`/v1/webhook-endpoints/${made.id}`, { key })).body))
      await newPet()
      await deliverWith(server.secrets)
      verifies(made.secret)
      // Rotated: both secrets sealed, both signing during the grace period.
      const rotated = (await server.request<{ secret: string }>(`/v1/webhook-endpoints/${made.id}/rotate-secret`, { method: 'POST', key, json: { grace: 3_600 } })).body
      const [after] = (await rawRows(server.config.databaseUrl, 'webhook_endpoints')).filter((r) => Number(r.id) === made.id)
      assert.match(String(after!.previous_secret), /^v1\./)
      await newPet()
      await deliverWith(server.secrets)
      verifies(made.secret)
      verifies(rotated.secret)
      await server.request(`/v1/webhook-endpoints/${made.id}`, { method: 'DELETE', key })
    })

    it('rotates the main key: the old one opens until reseal-secrets has sealed everything with the new one', async () => {
      const made = (await server.request<{ id: number; secret: string }>('/v1/webhook-endpoints', { method: 'POST', key, json: { url, enabledEvents: ['pet.created'] } })).body
      // One stored before secrets were sealed, in the clear.
      const legacySecret = 'whsec_c2VjcmV0IHN0b3JlZCBiZWZvcmU='
      const legacy = (await server.store.webhookEndpoints.insertEndpoint({ accountId: await server.accountId(key), url: `${url}?legacy`, description: '', enabledEvents: 'pet.created', secret: legacySecret }, clock.now()))!
      const oldKey = Buffer.from(TEST_SECRET_KEY, 'base64')
      const newKey = randomBytes(32)
      const rotating = createSecretBox(newKey, [oldKey])
      const newOnly = createSecretBox(newKey)

      await newPet()
      await deliverWith(rotating)
      const mine = received.slice(-2)
      assert.equal(mine.length, 2)
      const sentTo = (secret: string) =>
        mine.filter((r) => {
          try {
            new Webhook(secret).verify(r.body, r.headers as Record<string, string>)
            return true
          } catch {
            return false
          }
        }).length
      assert.equal(sentTo(made.secret), 1, 'signed with the secret sealed under the old key')
      assert.equal(sentTo(legacySecret), 1, 'and with the one stored in the clear')

      // Without the old key, nothing sealed by it opens: the attempt is recorded as failed, not lost.
      await newPet()
      await deliverWith(newOnly)
      const [refused] = await server.store.webhookEndpoints.attempts(made.id, 1)
      assert.match(refused!.error ?? '', /could not be sent: a signing secret is sealed with key [0-9a-f]{8}, which is neither/)

      assert.deepEqual(await resealSecrets(server.store.webhookEndpoints, rotating), { resealed: 2, current: 0 })
      assert.deepEqual(await resealSecrets(server.store.webhookEndpoints, rotating), { resealed: 0, current: 2 }, 'once is enough')
      for (const row of (await rawRows(server.config.databaseUrl, 'webhook_endpoints')).filter((r) => [made.id, legacy.id].includes(Number(r.id)))) {
        assert.equal(newOnly.stale(String(row.secret)), false)
      }
      const before = received.length
      await newPet()
      await deliverWith(newOnly)
      assert.equal(received.length, before + 2, 'the new key alone opens every secret')
      for (const id of [made.id, legacy.id]) await server.store.webhookEndpoints.deleteEndpoint(await server.accountId(key), id)
    })
  })
}
