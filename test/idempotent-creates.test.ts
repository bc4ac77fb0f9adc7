// Idempotency-Key on the creates beyond pets and orders, on both stores: POST
// /v1/categories, /v1/webhook-endpoints and /v1/keys replay their first 201 (a key's and
// an endpoint's secret included) and create nothing more; the secret a replay answers
// is kept sealed, never readable in the stored row, and `reseal-secrets` seals it again
// after a main key rotation.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { createManualClock } from '../src/clock.js'
import type { ErrorBody } from '../src/errors.js'
import { fingerprintOf, IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_TTL_MS } from '../src/idempotency/idempotency-key.js'
import type { Category } from '../src/schemas/category.js'
import type { ApiKeyWithSecret } from '../src/schemas/key.js'
import type { WebhookEndpoint } from '../src/schemas/webhook.js'
import { resealReplays } from '../src/secrets/reseal.js'
import { createSecretBox } from '../src/secrets/secret-box.js'
import { SCOPES } from '../src/vocabulary/scopes.js'
import { rawRows } from './helpers/raw-rows.js'
import { STORES, TEST_SECRET_KEY, startTestServer, type TestServer } from './helpers/server.js'

type Answer<T> = T & Partial<Omit<ErrorBody, 'status'>>

for (const store of STORES) describe(`Idempotency-Key on the other creates (${store})`, () => {
  const clock = createManualClock('2026-11-26T10:00:00Z')
  let server: TestServer
  let key: string
  const url = 'http://127.0.0.1:9/hook'
  before(async () => {
    server = await startTestServer({ store, clock, env: { PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } })
    key = await server.createKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 }, { scopes: SCOPES })
  })
  after(() => server.close())

  const post = <T>(path: string, idempotencyKey: string | undefined, json: unknown) =>
    server.request<Answer<T>>(path, { method: 'POST', key, json, headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey } })
  /** The Idempotency-Key record as the database holds it, every column. */
  const storedRecord = async (idempotencyKey: string) => (await rawRows(server.config.databaseUrl, 'idempotency_keys')).find((row) => row.idempotency_key === idempotencyKey)!
  /** The first answer and its retry: the same 201, Location and body, the retry marked as a replay. */
  async function replayed<T>(path: string, json: unknown): Promise<{ first: T; idem: string }> {
    const idem = randomUUID()
    const first = await post<T>(path, idem, json)
    assert.equal(first.status, 201, first.text)
    assert.equal(first.headers.get('idempotent-replayed'), null)
    const again = await post<T>(path, idem, json)
    assert.equal(again.status, 201, again.text)
    assert.equal(again.headers.get('idempotent-replayed'), 'true')
    assert.equal(again.headers.get('location'), first.headers.get('location'))
    assert.deepEqual(again.body, first.body)
    return { first: first.body, idem }
  }

  describe('POST /v1/categories', () => {
    it('replays the first 201 and adds nothing more (without a key the retry is a 409 category_name_taken)', async () => {
      const { first } = await replayed<Category>('/v1/categories', { name: 'Axolotls', description: 'Salamanders' })
      const all = await server.request<Category[]>('/v1/categories?limit=100', { key })
      assert.deepEqual(all.body.filter((c) => c.name === 'Axolotls'), [first])
      assert.equal((await post('/v1/categories', undefined, { name: 'Axolotls' })).body.code, 'category_name_taken')
    })

    it('answers 422 idempotency_key_reused for another body, and 409 idempotency_key_in_use while the first still runs', async () => {
      const idem = randomUUID()
      assert.equal((await post('/v1/categories', idem, { name: 'Newts' })).status, 201)
      const reused = await post('/v1/categories', idem, { name: 'Frogs' })
      assert.deepEqual([reused.status, reused.body.code], [422, 'idempotency_key_reused'])
      assert.equal((await post('/v1/categories', idem, { name: 'Newts', description: '' })).headers.get('idempotent-replayed'), 'true', 'a left-out description is the empty one')

      const running = randomUUID()
      const options = { fingerprint: fingerprintOf('createCategory', { name: 'Toads', description: '' }), now: clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS }
      assert.equal((await server.store.idempotency.claim({ accountId: await server.accountId(key), key: running }, options)).outcome, 'claimed')
      const inUse = await post('/v1/categories', running, { name: 'Toads' })
      assert.deepEqual([inUse.status, inUse.body.code, inUse.headers.get('retry-after')], [409, 'idempotency_key_in_use', '1'])
    })

    it('keeps no answer for a refusal: a taken name leaves the key free', async () => {
      assert.equal((await post('/v1/categories', undefined, { name: 'Caecilians' })).status, 201)
      const idem = randomUUID()
      for (let i = 0; i < 2; i++) assert.equal((await post('/v1/categories', idem, { name: 'caecilians' })).body.code, 'category_name_taken')
      assert.equal(await storedRecord(idem), undefined)
    })
  })

  describe('POST /v1/webhook-endpoints', () => {
    it('replays the first 201, signing secret included, makes one endpoint, and keeps the secret sealed', async () => {
      const { first, idem } = await replayed<WebhookEndpoint>('/v1/webhook-endpoints', { url, enabledEvents: ['pet.created', 'order.placed'] })
      assert.match(first.secret ?? '', /^whsec_/)
      const mine = await server.request<WebhookEndpoint[]>('/v1/webhook-endpoints', { key })
      assert.equal(mine.body.filter((endpoint) => endpoint.id === first.id).length, 1)
      assert.equal(mine.body.length, 1, 'no second endpoint')
      const row = await storedRecord(idem)
      assert.ok(!JSON.stringify(row).includes(first.secret!.slice('whsec_'.length)), 'no column holds the secret')
      assert.match(String(row.sealed_secret), /^v1\./)
      const reused = await post('/v1/webhook-endpoints', idem, { url, enabledEvents: ['*'] })
      assert.deepEqual([reused.status, reused.body.code], [422, 'idempotency_key_reused'])
      await server.request(`/v1/webhook-endpoints/${first.id}`, { method: 'DELETE', key })
    })
  })

  describe('POST /v1/keys', () => {
    it('replays the first 201 with a secret that works, and no stored row holds that secret', async () => {
      const { first, idem } = await replayed<ApiKeyWithSecret>('/v1/keys', { name: 'retried', scopes: ['pets:read'] })
      assert.match(first.key ?? '', /^ps_test_/)
      assert.equal((await server.request('/v1/pets', { key: first.key! })).status, 200)
      const row = await storedRecord(idem)
      assert.ok(!JSON.stringify(row).includes(first.key!), 'the record holds no secret in the clear')
      assert.match(String(row.sealed_secret), /^v1\./)
      const keys = (await rawRows(server.config.databaseUrl, 'api_keys')).filter((stored) => stored.name === 'retried')
      assert.equal(keys.length, 1, 'one key made')
      assert.ok(!JSON.stringify(keys).includes(first.key!))
    })

    it('replays a secret to the key that asked alone: another key of the account, sending the same body, gets 422', async () => {
      const other = await post<ApiKeyWithSecret>('/v1/keys', undefined, { name: 'fewer scopes', scopes: ['keys:write', 'pets:read'] })
      assert.equal(other.status, 201, other.text)
      const idem = randomUUID()
      const json = { name: 'orders clerk', scopes: ['orders:write'] }
      assert.equal((await post('/v1/keys', idem, json)).status, 201)
      const stolen = await server.request<Answer<ApiKeyWithSecret>>('/v1/keys', { method: 'POST', key: other.body.key!, json, headers: { 'idempotency-key': idem } })
      assert.equal(stolen.status, 422, `a key without orders:write was handed one that has it: ${stolen.text}`)
      assert.ok(!('key' in (stolen.body as object)))
    })

    it('reseals a replay\'s secret with a new main key (reseal-secrets), which alone opens it then', async () => {
      const { first, idem } = await replayed<ApiKeyWithSecret>('/v1/keys', { name: 'rotated' })
      const newKey = randomBytes(32)
      const newOnly = createSecretBox(newKey).for('replayed secret')
      const sealed = String((await storedRecord(idem)).sealed_secret)
      assert.throws(() => newOnly.open(sealed), /neither PETSTORE_SECRET_KEY/)
      const rotating = createSecretBox(newKey, [Buffer.from(TEST_SECRET_KEY, 'base64')])
      const { resealed } = await resealReplays(server.store.idempotency, rotating)
      assert.ok(resealed >= 1)
      assert.equal(newOnly.open(String((await storedRecord(idem)).sealed_secret)), first.key)
      assert.equal((await resealReplays(server.store.idempotency, rotating)).resealed, 0, 'once is enough')
    })
  })
})
