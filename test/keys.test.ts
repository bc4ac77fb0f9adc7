// Keys with a lifecycle, over HTTP on both stores: scopes (403 insufficient_scope),
// the admin API (/v1/keys) and what a key may give, expiry, disabling, rolling with a
// grace period across two instances, unbanning, and usage (the windows and the
// history, which outlives the instance that counted it). Accounts: accounts.test.ts.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SCOPES } from '../src/vocabulary/scopes.js'
import { createManualClock } from '../src/clock.js'
import type { ApiKey, Usage, UsageBucket } from '../src/schemas/key.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

interface Created {
  key?: string
  apiKey: ApiKey
}

for (const store of STORES) {
  describe(`API keys with a lifecycle (${store})`, () => {
    const clock = createManualClock('2026-11-24T10:00:10Z')
    let server: TestServer
    /** A second instance on the same database, with its own limiter and key cache. */
    let other: TestServer
    let admin: string
    let adminId: number
    let accountId: number

    before(async () => {
      server = await startTestServer({ store, clock })
      other = await startTestServer({ store: 'sqlite', clock, env: { DATABASE_URL: server.config.databaseUrl } })
      admin = await server.createKey('enterprise', { perMinute: 100_000, perDay: 10_000_000 }, { scopes: SCOPES, name: 'operator' })
      adminId = await server.keyId(admin)
      accountId = await server.accountId(admin)
    })
    after(async () => {
      await other.close()
      await server.close()
    })

    const create = async (json: object, key = admin) => server.request<Created>('/v1/keys', { method: 'POST', key, json })
    /** Past the authenticator's cache (3 s), so that a change made in the store is seen. */
    const pastCache = () => clock.advance(4_000)

    it('refuses an operation the key has no scope for: 403 insufficient_scope naming the scope, counted, with the rate-limit headers', async () => {
      const reader = (await create({ scopes: ['pets:read'] })).body.key!
      const read = await server.request('/v1/pets', { key: reader })
      assert.equal(read.status, 200)
      const write = await server.request('/v1/pets', { method: 'POST', key: reader, json: { name: 'Nope', categoryId: 1 } })
      assert.equal(write.status, 403)
      assert.deepEqual(write.body, {
        code: 'insufficient_scope',
        message:
          'This API key lacks the pets:write scope this operation needs; its scopes are pets:read. ' +
          `A key with keys:write can add it (PATCH /v1/keys/{id}, "scopes"); on the server, npx petstore keys create --account ${accountId} --scopes pets:write makes a key of this account that has it.`,
        status: 403,
      })
      assert.equal(write.headers.get('www-authenticate'), 'Bearer realm="petstore", error="insufficient_scope", scope="pets:write"')
      assert.equal(write.headers.get('x-ratelimit-remaining'), String(Number(read.headers.get('x-ratelimit-remaining')) - 1), 'counted like any request')
      assert.equal((await server.request('/v1/store/orders', { key: reader })).status, 403)
      assert.equal((await server.request('/v1/keys', { key: reader })).status, 403)
    })

    it('expands a write scope to its read, and takes the presets', async () => {
      const writer = (await create({ scopes: ['orders:write'] })).body
      assert.deepEqual(writer.apiKey.scopes, ['orders:read', 'orders:write'])
      assert.equal((await server.request('/v1/store/orders', { key: writer.key! })).status, 200)
      const plain = (await create({})).body.apiKey
      assert.deepEqual(plain.scopes, ['pets:read', 'pets:write', 'categories:read', 'categories:write', 'orders:read', 'orders:write', 'usage:read', 'events:read', 'webhooks:read', 'webhooks:write'], 'every scope but keys:*')
      assert.deepEqual((await create({ scopes: ['read_only'] })).body.apiKey.scopes, ['pets:read', 'categories:read', 'orders:read', 'usage:read', 'events:read', 'webhooks:read'], 'the presets, as on the command line')
      assert.deepEqual((await create({ scopes: ['all', 'keys:read'] })).body.apiKey.scopes, [...plain.scopes, 'keys:read'])
      const changed = await server.request<ApiKey>(`/v1/keys/${plain.id}`, { method: 'PATCH', key: admin, json: { scopes: ['read_only'] } })
      assert.deepEqual(changed.body.scopes, ['pets:read', 'categories:read', 'orders:read', 'usage:read', 'events:read', 'webhooks:read'], 'a change takes them too')
    })

    it('makes, lists and reads keys; the secret is in the 201 alone, and the key works at once on another instance', async () => {
      const res = await create({ name: 'ci', scopes: ['pets:read'] })
      assert.equal(res.status, 201)
      const { key, apiKey } = res.body
      assert.match(key!, /^ps_test_/)
      assert.equal(res.headers.get('location'), `/v1/keys/${apiKey.id}`)
      assert.deepEqual(
        { ...apiKey, createdAt: 'x' },
        {
          id: apiKey.id,
          accountId,
          name: 'ci',
          plan: 'enterprise',
          limits: { perMinute: 100_000, perDay: 10_000_000 },
          scopes: ['pets:read'],
          prefix: key!.slice(0, 12),
          status: 'active',
          bannedUntil: null,
          createdAt: 'x',
          lastUsedAt: null,
          expiresAt: null,
          revokedAt: null,
          replacedBy: null,
          createdBy: adminId,
        },
        'in the account of the key that made it, on its plan',
      )
      const read = await server.request<ApiKey>(`/v1/keys/${apiKey.id}`, { key: admin })
      assert.deepEqual(read.body, apiKey)
      assert.ok(!read.text.includes(key!))
      const page = await server.request<ApiKey[]>('/v1/keys?limit=1', { key: admin })
      assert.equal(page.body.length, 1)
      assert.match(page.headers.get('link') ?? '', /^<\/v1\/keys\?limit=1&cursor=[\w-]+>; rel="next"$/)
      assert.equal((await other.request('/v1/pets', { key: key! })).status, 200)
    })

    it('refuses a name no store keeps as sent (a NUL, a lone surrogate), or with a control character, with 400, on create and update', async () => {
      for (const name of ['a\u0000b', 'x\ud800', 'ok\u001b[2K\r9\t1\tenterprise', 'x\u202e']) {
        const res = await create({ name })
        assert.equal(res.status, 400, res.text)
        assert.equal((res.body as unknown as { code: string }).code, 'invalid_field')
      }
      const { apiKey } = (await create({ name: 'plain' })).body
      const update = await server.request(`/v1/keys/${apiKey.id}`, { method: 'PATCH', key: admin, json: { name: '\u0000' } })
      assert.equal(update.status, 400, update.text)
      assert.equal((await create({ name: '🐕‍🦺 e\u0301' })).status, 201, 'paired surrogates and combining marks are text')
    })

    it('replays a create with the same Idempotency-Key, secret included (kept sealed: test/idempotent-creates.test.ts)', async () => {
      const headers = { 'idempotency-key': `create-${store}` }
      const first = await server.request<Created>('/v1/keys', { method: 'POST', key: admin, json: {}, headers })
      const again = await server.request<Created>('/v1/keys', { method: 'POST', key: admin, json: {}, headers })
      assert.equal(again.status, 201)
      assert.equal(again.headers.get('idempotent-replayed'), 'true')
      assert.deepEqual(again.body, first.body)
      assert.ok(first.body.key)
      const stored = await server.store.idempotency.claim({ accountId: await server.accountId(admin), key: headers['idempotency-key'] }, { fingerprint: 'x', now: clock.now(), ttlMs: 1, leaseMs: 1 })
      assert.equal(stored.outcome, 'mismatch')
    })

    it('hands a replay only to a caller that could make the key now: one narrowed since, or a key made widened since, gets 403, not the secret', async () => {
      const headers = { 'idempotency-key': `narrowed-${store}` }
      const maker = (await create({ name: 'maker', scopes: ['pets:read', 'pets:write', 'keys:write'] })).body
      const ask = () => server.request<Created & { code: string; message: string }>('/v1/keys', { method: 'POST', key: maker.key!, json: { name: 'wide', scopes: ['pets:read', 'pets:write'] }, headers })
      const setScopes = async (id: number, scopes: string[]) => {
        assert.equal((await server.request(`/v1/keys/${id}`, { method: 'PATCH', key: admin, json: { scopes } })).status, 200)
        pastCache()
      }
      const first = await ask()
      assert.equal(first.status, 201)
      await setScopes(maker.apiKey.id, ['pets:read', 'keys:write'])
      const narrowed = await ask()
      assert.deepEqual([narrowed.status, narrowed.body.code, narrowed.body.key], [403, 'forbidden', undefined])
      assert.match(narrowed.body.message, /cannot give scopes it does not have: pets:write/)
      // Given its scopes back, the same replay is answered again: nothing was lost.
      await setScopes(maker.apiKey.id, ['pets:read', 'pets:write', 'keys:write'])
      const restored = await ask()
      assert.deepEqual([restored.status, restored.body.key], [201, first.body.key])
      // The key it made, widened since beyond the maker's scopes: its secret is judged as the key now stands.
      await setScopes(first.body.apiKey.id, ['pets:read', 'pets:write', 'orders:read'])
      const widened = await ask()
      assert.deepEqual([widened.status, widened.body.code, widened.body.key], [403, 'forbidden', undefined])
    })

    it('replays a create whose body has the same fields and values in another order', async () => {
      const headers = { 'idempotency-key': `reordered-${store}` }
      const first = await server.request<Created>('/v1/keys', { method: 'POST', key: admin, json: { name: 'n1', expiresIn: '30d', scopes: ['pets:read', 'orders:read'] }, headers })
      assert.equal(first.status, 201)
      const again = await server.request<Created>('/v1/keys', { method: 'POST', key: admin, json: { scopes: ['orders:read', 'pets:read'], expiresIn: '30d', name: 'n1' }, headers })
      assert.equal(again.status, 201, again.text)
      assert.equal(again.headers.get('idempotent-replayed'), 'true')
      assert.equal(again.body.apiKey.id, first.body.apiKey.id)
      const other = await server.request('/v1/keys', { method: 'POST', key: admin, json: { name: 'n1', expiresIn: '31d' }, headers })
      assert.equal(other.status, 422, 'another value is another request')
    })

    it('never lets a key give more than it has: no scope it lacks (403 forbidden), no plan or limits (the operator\'s: 400)', async () => {
      const manager = (await create({ scopes: ['pets:read', 'keys:write'] })).body.key!
      const res = await create({ scopes: ['pets:write'] }, manager)
      assert.equal(res.status, 403)
      assert.equal((res.body as unknown as { code: string }).code, 'forbidden')
      assert.match((res.body as unknown as { message: string }).message, /scopes it does not have: pets:write/)
      for (const json of [{ plan: 'business' }, { limits: { perMinute: 5, perDay: 50 } }]) {
        const planned = await create({ ...json, scopes: ['pets:read'] }, manager)
        assert.equal(planned.status, 400, JSON.stringify(json))
        assert.equal((planned.body as unknown as { code: string }).code, 'invalid_field')
        assert.match((planned.body as unknown as { message: string }).message, /is the account's, shared by all its keys, and set by the operator \(npx petstore accounts set-plan ID PLAN\)/)
      }
      assert.equal((await create({ scopes: ['pets:read'] }, manager)).status, 201)
      // Nor can it raise a key above itself afterwards.
      const made = (await create({ scopes: ['pets:read'] }, manager)).body.apiKey
      const patch = await server.request(`/v1/keys/${made.id}`, { method: 'PATCH', key: manager, json: { scopes: ['keys:write', 'orders:write'] } })
      assert.equal(patch.status, 403)
    })

    it('never lets a key that expires roll one that outlives it: the new secret would be its own (403 forbidden)', async () => {
      const shortLived = (await create({ scopes: ['pets:read', 'keys:write'], expiresIn: '10m' })).body.key!
      const forever = (await create({ scopes: ['pets:read'] })).body.apiKey
      const later = (await create({ scopes: ['pets:read'], expiresIn: '1h' })).body.apiKey
      for (const { id } of [forever, later]) {
        const res = await server.request(`/v1/keys/${id}/roll`, { method: 'POST', key: shortLived, json: { grace: 0 } })
        assert.equal(res.status, 403, res.text)
        assert.match((res.body as { message: string }).message, /cannot roll a key that outlives it/)
        assert.equal((await server.request<ApiKey>(`/v1/keys/${id}`, { key: admin })).body.replacedBy, null, 'nothing rolled')
      }
      // Nor add scopes to one, or enable one: its power would outlast the short-lived key's.
      const stopped = (await create({ scopes: ['pets:read'] })).body.apiKey
      assert.equal((await server.request(`/v1/keys/${stopped.id}`, { method: 'PATCH', key: admin, json: { enabled: false } })).status, 200)
      for (const [what, id, json] of [
        ['add a scope', forever.id, { scopes: ['pets:read', 'keys:write'] }],
        ['enable', stopped.id, { enabled: true }],
      ] as const) {
        const res = await server.request(`/v1/keys/${id}`, { method: 'PATCH', key: shortLived, json })
        assert.equal(res.status, 403, `${what}: ${res.text}`)
        assert.match((res.body as { message: string }).message, new RegExp(`cannot ${what === 'enable' ? 'enable' : 'add scopes to'} a key that outlives it`))
      }
      assert.deepEqual((await server.request<ApiKey>(`/v1/keys/${forever.id}`, { key: admin })).body.scopes, ['pets:read'], 'no scope added')
      assert.equal((await server.request<ApiKey>(`/v1/keys/${stopped.id}`, { key: admin })).body.status, 'disabled', 'not enabled')
      const narrowed = await server.request<ApiKey>(`/v1/keys/${forever.id}`, { method: 'PATCH', key: shortLived, json: { scopes: [], name: 'renamed' } })
      assert.equal(narrowed.status, 200, 'taking scopes away, or a name, gives nothing')
      assert.equal((await server.request(`/v1/keys/${stopped.id}`, { method: 'PATCH', key: shortLived, json: { enabled: false } })).status, 200, 'nor disabling')
      // Made by it: a key rolls only itself and the keys it made.
      const sooner = (await create({ scopes: ['pets:read'], expiresIn: '5m' }, shortLived)).body.apiKey
      assert.equal((await server.request(`/v1/keys/${sooner.id}`, { method: 'PATCH', key: shortLived, json: { scopes: ['pets:read', 'keys:write'] } })).status, 200, 'a key that ends first takes a scope')
      assert.equal((await server.request(`/v1/keys/${sooner.id}/roll`, { method: 'POST', key: shortLived, json: {} })).status, 201, 'one that ends first')
      assert.equal((await server.request('/v1/keys/' + (await server.keyId(shortLived)) + '/roll', { method: 'POST', key: shortLived, json: {} })).status, 201, 'itself')
    })

    it('refuses a key rolled with grace 0, revoked, disabled or narrowed at its next request on the instance that made the change', async () => {
      const used = async () => {
        const { key, apiKey } = (await create({ scopes: ['pets:read'] })).body
        assert.equal((await server.request('/v1/pets', { key: key! })).status, 200, 'cached by this instance')
        return { key: key!, id: apiKey.id }
      }
      const rolled = await used()
      assert.equal((await server.request(`/v1/keys/${rolled.id}/roll`, { method: 'POST', key: admin, json: { grace: 0 } })).status, 201)
      assert.equal((await server.request('/v1/pets', { key: rolled.key })).status, 401, 'grace 0 stops it now')
      const revoked = await used()
      assert.equal((await server.request(`/v1/keys/${revoked.id}/revoke`, { method: 'POST', key: admin })).status, 200)
      assert.equal((await server.request('/v1/pets', { key: revoked.key })).status, 401, 'revoked')
      const disabled = await used()
      assert.equal((await server.request(`/v1/keys/${disabled.id}`, { method: 'PATCH', key: admin, json: { enabled: false } })).status, 200)
      assert.equal((await server.request('/v1/pets', { key: disabled.key })).status, 401, 'disabled')
      const narrowed = await used()
      assert.equal((await server.request(`/v1/keys/${narrowed.id}`, { method: 'PATCH', key: admin, json: { scopes: ['orders:read'] } })).status, 200)
      assert.equal((await server.request('/v1/pets', { key: narrowed.key })).status, 403, 'its scope taken away')
    })

    it('makes a key with no scope from scopes: [] (as PATCH does): it reads its account, and nothing else', async () => {
      const res = await create({ scopes: [] })
      assert.equal(res.status, 201, res.text)
      assert.deepEqual(res.body.apiKey.scopes, [])
      assert.equal((await server.request('/v1/account', { key: res.body.key! })).status, 200)
      assert.equal((await server.request('/v1/pets', { key: res.body.key! })).status, 403)
    })

    it('expires a key: 401 with error_description, at the second it expires, on every instance', async () => {
      const { key, apiKey } = (await create({ expiresIn: 60 })).body
      assert.equal(apiKey.expiresAt, new Date(clock.now() + 60_000).toISOString())
      assert.equal((await server.request('/v1/pets', { key: key! })).status, 200)
      assert.equal((await other.request('/v1/pets', { key: key! })).status, 200)
      clock.advance(60_000)
      for (const instance of [server, other]) {
        const res = await instance.request('/v1/pets', { key: key! })
        assert.equal(res.status, 401)
        assert.match((res.body as { message: string }).message, /expired at/)
        assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="petstore", error="invalid_token", error_description="The API key expired"')
      }
      assert.equal((await server.request<ApiKey>(`/v1/keys/${apiKey.id}`, { key: admin })).body.status, 'expired')
      assert.equal((await create({ expiresIn: 367 * 86_400 })).status, 400, 'at most a year')
      assert.equal((await create({ expiresIn: '367d' })).status, 400, 'at most a year, as a duration too')
      const soon = await create({ expiresIn: '1y' })
      assert.equal(soon.status, 400)
      assert.equal((soon.body as unknown as { message: string }).message, 'field "expiresIn" must be an integer, or must be a duration: a whole number without leading zeros, then s, m, h or d, such as "90s", "30m", "12h" or "30d"', 'each form it may take, in words, not only the first')
      const padded = await create({ expiresIn: '00001' })
      assert.equal((padded.body as unknown as { message: string }).message, (soon.body as unknown as { message: string }).message, 'the document\'s pattern refuses what the service refuses')
      const durations = [['30d', 30 * 86_400_000], ['12h', 12 * 3_600_000], ['90s', 90_000], ['3600', 3_600_000]] as const
      for (const [expiresIn, ms] of durations) {
        assert.equal((await create({ expiresIn })).body.apiKey.expiresAt, new Date(clock.now() + ms).toISOString(), `expiresIn ${expiresIn}, as the command line takes it`)
      }
    })

    it('disables and enables a key (401 while disabled, on every instance within the cache)', async () => {
      const { key, apiKey } = (await create({})).body
      assert.equal((await other.request('/v1/pets', { key: key! })).status, 200)
      const off = await server.request<ApiKey>(`/v1/keys/${apiKey.id}`, { method: 'PATCH', key: admin, json: { enabled: false } })
      assert.equal(off.body.status, 'disabled')
      pastCache()
      const refused = await other.request('/v1/pets', { key: key! })
      assert.equal(refused.status, 401)
      assert.match(refused.headers.get('www-authenticate') ?? '', /error_description="The API key is disabled"/)
      await server.request(`/v1/keys/${apiKey.id}`, { method: 'PATCH', key: admin, json: { enabled: true } })
      pastCache()
      assert.equal((await other.request('/v1/pets', { key: key! })).status, 200)
    })

    it('rolls a key: a new secret with the same settings, the old one working through the grace period on both instances, one rate limit for both', async () => {
      const { key: old, apiKey } = (await create({ name: 'rolled', scopes: ['pets:read'] })).body
      await server.request('/v1/pets', { key: old! })
      const rolled = await server.request<Created>(`/v1/keys/${apiKey.id}/roll`, { method: 'POST', key: admin, json: { grace: 60 } })
      assert.equal(rolled.status, 201)
      const next = rolled.body
      assert.notEqual(next.key, old)
      assert.deepEqual([next.apiKey.name, next.apiKey.accountId, next.apiKey.scopes, next.apiKey.createdBy], ['rolled', accountId, ['pets:read'], adminId])
      const before = Number((await other.request('/v1/pets', { key: old! })).headers.get('x-ratelimit-remaining'))
      const after = Number((await other.request('/v1/pets', { key: next.key! })).headers.get('x-ratelimit-remaining'))
      assert.equal(after, before - 1, 'the new key counts in the old key\'s windows')
      const oldView = (await server.request<ApiKey>(`/v1/keys/${apiKey.id}`, { key: admin })).body
      assert.equal(oldView.replacedBy, next.apiKey.id)
      assert.equal(oldView.expiresAt, new Date(clock.now() + 60_000).toISOString())
      clock.advance(60_000)
      for (const instance of [server, other]) {
        const res = await instance.request('/v1/pets', { key: old! })
        assert.equal(res.status, 401)
        assert.match((res.body as { message: string }).message, new RegExp(`rolled, and replaced by key ${next.apiKey.id}`))
        assert.equal((await instance.request('/v1/pets', { key: next.key! })).status, 200)
      }
      // grace 0: the old key stops now (within the cache's few seconds).
      const now = (await server.request<Created>(`/v1/keys/${next.apiKey.id}/roll`, { method: 'POST', key: admin, json: { grace: 0 } })).body
      pastCache()
      assert.equal((await other.request('/v1/pets', { key: next.key! })).status, 401)
      assert.equal((await other.request('/v1/pets', { key: now.key! })).status, 200)
      // No body: the default grace, 24 hours.
      const defaulted = await server.request<Created>(`/v1/keys/${now.apiKey.id}/roll`, { method: 'POST', key: admin })
      assert.equal(defaulted.status, 201)
      assert.equal((await server.request<ApiKey>(`/v1/keys/${now.apiKey.id}`, { key: admin })).body.expiresAt, new Date(clock.now() + 86_400_000).toISOString())
      assert.equal((await server.request(`/v1/keys/${now.apiKey.id}/roll`, { method: 'POST', key: admin, json: { grace: 8 * 86_400 } })).status, 400, 'at most 7 days')
    })

    it('rolls a key once: its leaked secret cannot roll it again into a key the cascade misses (409 key_already_rolled), and a revoked key is neither changed nor rolled (409 key_revoked)', async () => {
      const leaked = (await create({ name: 'leaked', scopes: ['all', 'keys:write'] })).body
      const successor = (await server.request<Created>(`/v1/keys/${leaked.apiKey.id}/roll`, { method: 'POST', key: admin, json: { grace: 3_600 } })).body
      // The holder of the leaked secret, within its grace period: a key of its own, then a second roll of the leaked key.
      const made = (await create({ name: 'made' }, leaked.key!)).body
      const again = await server.request<{ code: string; message: string }>(`/v1/keys/${leaked.apiKey.id}/roll`, { method: 'POST', key: leaked.key!, json: { grace: 3_600 } })
      assert.equal(again.status, 409)
      assert.equal(again.body.code, 'key_already_rolled')
      assert.equal(again.body.message, `Key ${leaked.apiKey.id} was rolled already, into key ${successor.apiKey.id}: roll key ${successor.apiKey.id} instead.`)
      assert.equal((await server.request(`/v1/keys/${leaked.apiKey.id}/roll`, { method: 'POST', key: admin, json: {} })).status, 409, 'not by the operator either')
      const cascade = await server.request(`/v1/keys/${successor.apiKey.id}/revoke?cascade=true`, { method: 'POST', key: admin })
      assert.equal(cascade.headers.get('petstore-revoked'), [leaked.apiKey.id, successor.apiKey.id, made.apiKey.id].sort((a, b) => a - b).join(','))
      for (const [what, res] of [
        ['PATCH', await server.request<{ code: string }>(`/v1/keys/${leaked.apiKey.id}`, { method: 'PATCH', key: admin, json: { enabled: true } })],
        ['roll', await server.request<{ code: string }>(`/v1/keys/${made.apiKey.id}/roll`, { method: 'POST', key: admin, json: {} })],
      ] as const) {
        assert.equal(res.status, 409, what)
        assert.equal(res.body.code, 'key_revoked', what)
      }
    })

    it('rolls only itself and the keys it made, however deep (403 forbidden for another key): the new secret stays within its own cascade', async () => {
      const owner = (await create({ name: 'owner', scopes: ['all', 'keys:write'] })).body
      const leaked = (await create({ name: 'leaked', scopes: ['all', 'keys:write'] }, owner.key!)).body
      const made = (await create({ name: 'made', scopes: ['pets:read', 'keys:write'] }, leaked.key!)).body
      const grandchild = (await create({ name: 'grandchild', scopes: ['pets:read'] }, made.key!)).body
      // The holder of the leaked key tries to roll its maker's key, and a sibling's: it would keep secrets its own revoke does not reach.
      const sibling = (await create({ name: 'sibling', scopes: ['pets:read'] }, owner.key!)).body
      for (const target of [owner, sibling]) {
        const refused = await server.request<{ code: string; message: string }>(`/v1/keys/${target.apiKey.id}/roll`, { method: 'POST', key: leaked.key!, json: { grace: 604_800 } })
        assert.equal(refused.status, 403, target.apiKey.name)
        assert.equal(refused.body.code, 'forbidden')
        assert.match(refused.body.message, /a key rolls only itself and those/)
      }
      assert.equal((await server.request<{ replacedBy: number | null }>(`/v1/keys/${owner.apiKey.id}`, { key: admin })).body.replacedBy, null, 'nothing was rolled')
      const rolled = await server.request<Created>(`/v1/keys/${grandchild.apiKey.id}/roll`, { method: 'POST', key: leaked.key!, json: {} })
      assert.equal(rolled.status, 201, 'a key it made, two steps down')
      const itself = await server.request<Created>(`/v1/keys/${leaked.apiKey.id}/roll`, { method: 'POST', key: leaked.key!, json: {} })
      assert.equal(itself.status, 201, 'itself')
      assert.equal(itself.body.apiKey.createdBy, leaked.apiKey.id, 'rolled by itself: its own making')
      // Replaced, in its grace period, it rolls nothing more: its successor (in its reach) with grace 0 would be stopped for a secret of its own.
      const replaced = await server.request<{ code: string; message: string }>(`/v1/keys/${itself.body.apiKey.id}/roll`, { method: 'POST', key: leaked.key!, json: { grace: 0 } })
      assert.deepEqual([replaced.status, replaced.body.code], [403, 'forbidden'])
      assert.match(replaced.body.message, /was replaced by a roll/)
      const bySibling = await server.request<Created>(`/v1/keys/${sibling.apiKey.id}/roll`, { method: 'POST', key: owner.key!, json: {} })
      assert.equal(bySibling.status, 201, 'its maker may')
      assert.equal(bySibling.body.apiKey.createdBy, owner.apiKey.id, "rolled by its maker: the maker's, as the old one was")
      const revoked = await server.request(`/v1/keys/${leaked.apiKey.id}/revoke?cascade=true`, { method: 'POST', key: owner.key! })
      const reached = revoked.headers.get('petstore-revoked')!.split(',').map(Number)
      assert.ok(reached.includes(rolled.body.apiKey.id), 'the secret it was handed dies with it')
      assert.ok(reached.includes(itself.body.apiKey.id), 'and the one it rolled itself into')
      pastCache()
      assert.equal((await server.request('/v1/pets', { key: itself.body.key! })).status, 401)
      // The key its maker rolled for it is not the old key's holder's: revoking the old one with cascade leaves it.
      const old = await server.request(`/v1/keys/${sibling.apiKey.id}/revoke?cascade=true`, { method: 'POST', key: owner.key! })
      assert.equal(old.headers.get('petstore-revoked'), String(sibling.apiKey.id))
      assert.equal((await server.request('/v1/pets', { key: bySibling.body.key! })).status, 200)
    })

    it('rolls a key once when rolls of it race on two instances: one 201, and 409 key_already_rolled for each other', async () => {
      const target = (await create({ scopes: ['pets:read'] })).body.apiKey
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 ? other : server).request<{ code?: string }>(`/v1/keys/${target.id}/roll`, { method: 'POST', key: admin, json: { grace: 0 } })),
      )
      const tally = answers.map((res) => `${res.status}${res.body.code ? ` ${res.body.code}` : ''}`).sort()
      assert.deepEqual(tally, ['201', ...Array<string>(11).fill('409 key_already_rolled')])
    })

    it('shows a ban in the key\'s status, and lifts it; the ban is the key\'s own, not its account\'s', async () => {
      const key = await server.createKey('enterprise', { perMinute: 2, perDay: 1000 })
      const apiKey = { id: await server.keyId(key) }
      // An operator key of the same account (the limits are shared: it is limited too, never banned).
      const boss = await server.createKey('free', {}, { scopes: SCOPES, accountId: await server.accountId(key) })
      let last = 0
      for (let i = 0; i < 25 && last !== 429; i++) last = (await server.request('/v1/pets', { key: key! })).status
      let status = 0
      for (let i = 0; i < 25; i++) {
        const res = await server.request('/v1/pets', { key: key! })
        status = res.status
        if ((res.body as { code?: string }).code === 'key_banned') break
      }
      assert.equal(status, 429)
      const sibling = await server.request(`/v1/keys/${apiKey.id}`, { key: boss })
      assert.equal(sibling.status, 429)
      assert.equal((sibling.body as { code: string }).code, 'rate_limited', 'the account\'s window is full; the other key is not banned')
      clock.advance(60_000)
      const banned = (await server.request<ApiKey>(`/v1/keys/${apiKey.id}`, { key: boss })).body
      assert.equal(banned.status, 'banned')
      assert.ok(banned.bannedUntil && Date.parse(banned.bannedUntil) > clock.now())
      assert.equal((await server.request(`/v1/keys/${apiKey.id}`, { key: admin })).status, 404, 'another account\'s key')
      const lifted = await server.request<ApiKey>(`/v1/keys/${apiKey.id}/unban`, { method: 'POST', key: boss })
      assert.equal(lifted.body.status, 'active')
      assert.equal(lifted.body.bannedUntil, null)
      clock.advance(60_000) // the next minute: the window, which unbanning keeps, has room again
      assert.equal((await server.request('/v1/pets', { key: key! })).status, 200)
    })

    it('GET /v1/usage shows the caller\'s windows without counting itself', async () => {
      clock.set('2026-11-24T11:00:05Z')
      const key = await server.createKey('free')
      await server.request('/v1/pets', { key })
      const first = await server.request<Usage>('/v1/usage', { key })
      const second = await server.request<Usage>('/v1/usage', { key })
      assert.equal(first.status, 200)
      assert.deepEqual(first.body, second.body, 'asking is not counted')
      assert.deepEqual(first.body.minute, { limit: 60, remaining: 59, reset: Date.parse('2026-11-24T11:01:00Z') / 1000, used: 1 })
      assert.deepEqual(first.body.day, { limit: 1000, remaining: 999, reset: Date.parse('2026-11-25T00:00:00Z') / 1000, used: 1 })
      assert.equal(first.body.bannedUntil, null)
      assert.equal(first.headers.get('x-ratelimit-remaining'), '59')
      assert.equal((await server.request('/v1/usage')).status, 401)
    })

    it('keeps a usage history per hour and outcome, readable by the key and by operators, after the instance that counted it is gone', async () => {
      clock.set('2026-11-24T12:30:00Z')
      const key = await server.createKey('enterprise', { perMinute: 3, perDay: 1000 }, { scopes: ['pets:read', 'usage:read'] })
      const apiKey = { id: await server.keyId(key) }
      const keeper = await server.createKey('free', {}, { scopes: ['keys:read'], accountId: await server.accountId(key) })
      // On the second instance: 3 served, 1 forbidden (no pets:write), then limited.
      for (let i = 0; i < 2; i++) await other.request('/v1/pets', { key: key! })
      await other.request('/v1/pets', { method: 'POST', key: key!, json: { name: 'Nope', categoryId: 1 } })
      await other.request('/v1/pets', { key: key! })
      await other.request('/v1/pets', { key: key! })
      // Its counts reach the store when it closes (and every few seconds while it runs).
      await other.close()
      clock.set('2026-11-24T13:10:00Z')
      const history = await server.request<UsageBucket[]>('/v1/usage/history?from=2026-11-24T12:00:00Z', { key: key! })
      assert.equal(history.status, 200)
      assert.deepEqual(history.body, [{ start: '2026-11-24T12:00:00.000Z', ok: 2, rate_limited: 2, banned: 0, forbidden: 1, error: 0 }])
      const operator = await server.request<UsageBucket[]>(`/v1/keys/${apiKey.id}/usage?granularity=day`, { key: keeper })
      // The day also holds the history request above, at 13:10.
      assert.deepEqual(operator.body, [{ start: '2026-11-24T00:00:00.000Z', ok: 3, rate_limited: 2, banned: 0, forbidden: 1, error: 0 }])
      assert.equal((await server.request(`/v1/keys/${apiKey.id}/usage`, { key: admin })).status, 404, 'another account\'s key')
      assert.equal((await server.request('/v1/usage/history?from=2026-11-24T14:00:00Z&to=2026-11-24T13:00:00Z', { key: key! })).status, 400)
      // A day the calendar lacks is not a date (Date.parse reads 2026-02-30 as March 2).
      for (const from of ['2026-02-30T00:00:00Z', '2026-11-31T00:00:00Z', '2026-13-01T00:00:00Z']) {
        const res = await server.request<{ message: string }>(`/v1/usage/history?from=${from}`, { key: admin })
        assert.equal(res.status, 400, from)
        assert.match(res.body.message, /^parameter "from" must be a date and time of the calendar with its zone \(RFC 3339\), such as 2026-11-28T12:00:00Z$/, from)
        assert.doesNotMatch(res.body.message, /90 days/, from)
      }
      const leap = await server.request<{ message: string }>('/v1/usage/history?from=2024-02-29T00:00:00Z', { key: admin })
      assert.match(leap.body.message, /90 days/, `a leap day is a date, refused only for a range longer than 90 days: ${leap.body.message}`)
      // /metrics counts by plan and outcome, never by key.
      const metrics = (await server.request('/metrics')).text
      assert.match(metrics, /petstore_api_requests_total\{plan="enterprise",outcome="ok"\} \d+/)
      assert.doesNotMatch(metrics, /petstore_api_requests_total\{[^}]*key/)
      other = await startTestServer({ store: 'sqlite', clock, env: { DATABASE_URL: server.config.databaseUrl } })
    })
  })
}
