// Accounts (decision D11), over HTTP on both stores and two instances: an account owns
// what its keys make, so a roll keeps it and a restricted key sees it; limits are the
// account's, bans the key's; a key with keys:write manages its own account's keys
// only, never one with a scope it lacks, never gives a scope or expiry it lacks, and
// what it makes dies with it on a cascade.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SCOPES } from '../src/vocabulary/scopes.js'
import { createManualClock } from '../src/clock.js'
import type { Account, ApiKey } from '../src/schemas/key.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

interface Created {
  key?: string
  apiKey: ApiKey
}

for (const store of STORES) {
  describe(`accounts (${store})`, () => {
    const clock = createManualClock('2026-11-25T10:00:10Z')
    let server: TestServer
    /** A second instance on the same database, with its own limiter and key cache. */
    let other: TestServer

    before(async () => {
      server = await startTestServer({ store, clock, env: { PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } })
      other = await startTestServer({ store: 'sqlite', clock, env: { DATABASE_URL: server.config.databaseUrl, PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } })
    })
    after(async () => {
      await other.close()
      await server.close()
    })

    /** A key the operator makes: the first of an account of its own. */
    const operatorKey = (scopes: readonly (typeof SCOPES)[number][] = SCOPES, plan = 'enterprise') =>
      server.createKey(plan, plan === 'enterprise' ? { perMinute: 10_000, perDay: 1_000_000 } : {}, { scopes })
    const make = (key: string, json: object = {}) => server.request<Created>('/v1/keys', { method: 'POST', key, json })
    const newPet = async (key: string) => (await server.request<{ id: number }>('/v1/pets', { method: 'POST', key, json: { name: 'Rex', categoryId: 1 } })).body.id
    const pastCache = () => clock.advance(4_000)

    it('GET /v1/account: the account of any valid key, its plan and limits, how many keys it has, and the calling key with its scopes', async () => {
      const owner = await operatorKey()
      const made = (await make(owner, { name: 'reader', scopes: ['pets:read'], expiresIn: '30d' })).body
      const reader = made.key!
      const res = await other.request<Account>('/v1/account', { key: reader })
      assert.equal(res.status, 200)
      // The key's own record without keys:read: what it may do, until when; nothing of another key.
      const { id, name, prefix, scopes, createdAt, expiresAt } = made.apiKey
      assert.deepEqual(res.body.callingKey, { id, name, prefix, scopes, createdAt, expiresAt })
      assert.deepEqual(res.body.callingKey.scopes, ['pets:read'])
      assert.ok(expiresAt !== null)
      assert.equal((await other.request('/v1/keys', { key: reader })).status, 403, 'other keys still need keys:read')
      const own = (await other.request<Account>('/v1/account', { key: owner })).body.callingKey
      assert.deepEqual([own.name, own.scopes, own.expiresAt], ['test', SCOPES, null])
      assert.deepEqual({ ...res.body, createdAt: 'x', callingKey: 'k' }, {
        id: await server.accountId(owner),
        name: 'test',
        plan: 'enterprise',
        limits: { perMinute: 10_000, perDay: 1_000_000 },
        status: 'active',
        createdAt: 'x',
        disabledAt: null,
        keyCount: 2,
        callingKey: 'k',
      })
      assert.ok(res.headers.get('x-ratelimit-remaining'), 'counted like any request')
      assert.equal((await server.request('/v1/account')).status, 401)
    })

    it('a roll keeps every order, endpoint, event and usage row visible to the new key, on both instances', async () => {
      clock.set('2026-11-25T11:00:10Z')
      const admin = await operatorKey()
      const old = (await make(admin, { name: 'shop' })).body
      const petId = await newPet(old.key!)
      const order = await server.request<{ id: number }>('/v1/store/orders', { method: 'POST', key: old.key!, json: { petId } })
      assert.equal(order.status, 201)
      const endpoint = await server.request<{ id: number }>('/v1/webhook-endpoints', { method: 'POST', key: old.key!, json: { url: 'http://127.0.0.1:9/hook', enabledEvents: ['order.placed'] } })
      assert.equal(endpoint.status, 201, endpoint.text)
      const rolled = (await server.request<Created>(`/v1/keys/${old.apiKey.id}/roll`, { method: 'POST', key: admin, json: { grace: 0 } })).body
      pastCache()
      assert.equal((await server.request('/v1/pets', { key: old.key! })).status, 401, 'the old key stopped')
      for (const instance of [server, other]) {
        const mine = await instance.request<{ id: number; status: string }>(`/v1/store/orders/${order.body.id}`, { key: rolled.key! })
        assert.equal(mine.status, 200, 'the new key reads the order the old one placed')
        const endpoints = await instance.request<{ id: number }[]>('/v1/webhook-endpoints', { key: rolled.key! })
        assert.deepEqual(endpoints.body.map((e) => e.id), [endpoint.body.id])
        const events = await instance.request<{ type: string; data: { id: number } }[]>('/v1/events?type=order.placed', { key: rolled.key! })
        assert.ok(events.body.some((event) => event.data.id === order.body.id), JSON.stringify(events.body))
      }
      // The new key can still close the order the old key placed: the pet is not stuck.
      const cancelled = await server.request<{ status: string }>(`/v1/store/orders/${order.body.id}/cancel`, { method: 'POST', key: rolled.key! })
      assert.equal(cancelled.status, 200)
      assert.equal(cancelled.body.status, 'cancelled')
      const history = await server.request<{ ok: number }[]>('/v1/usage/history', { key: rolled.key! })
      assert.ok(history.body.reduce((sum, bucket) => sum + bucket.ok, 0) >= 4, 'the account\'s usage includes the old key\'s requests')
      const oldOnly = await server.request<{ ok: number }[]>(`/v1/usage/history?keyId=${old.apiKey.id}`, { key: admin })
      assert.equal(oldOnly.status, 200)
      assert.equal(oldOnly.body.reduce((sum, bucket) => sum + bucket.ok, 0), 3, 'the old key\'s own: a pet, an order, an endpoint')
      assert.equal((await server.request(`/v1/usage/history?keyId=${await server.keyId(await operatorKey())}`, { key: admin })).status, 404, 'another account\'s key')
      // Another key's usage, as GET /v1/keys/{id}/usage, needs keys:read: without it a key learnt its account's key ids and when each was used.
      const withoutKeysRead = await server.request<{ code: string; message: string }>(`/v1/usage/history?keyId=${old.apiKey.id}`, { key: rolled.key! })
      assert.equal(withoutKeysRead.status, 403, withoutKeysRead.text)
      assert.equal(withoutKeysRead.body.code, 'insufficient_scope')
      assert.match(withoutKeysRead.headers.get('www-authenticate') ?? '', /scope="keys:read"/)
      assert.equal((await server.request(`/v1/usage/history?keyId=${rolled.apiKey.id}`, { key: rolled.key! })).status, 200, 'its own needs no more')
    })

    it('a read_only key reads the orders its account\'s main key placed', async () => {
      const main = await operatorKey()
      const petId = await newPet(main)
      const order = (await server.request<{ id: number }>('/v1/store/orders', { method: 'POST', key: main, json: { petId } })).body
      const reporting = (await make(main, { scopes: ['read_only'] })).body.key!
      const list = await other.request<{ id: number }[]>('/v1/store/orders', { key: reporting })
      assert.deepEqual(list.body.map((o) => o.id), [order.id])
      assert.equal((await other.request(`/v1/store/orders/${order.id}`, { key: reporting })).status, 200)
      const stranger = await operatorKey()
      assert.equal((await server.request(`/v1/store/orders/${order.id}`, { key: stranger })).status, 404, 'another account\'s order is not found')
    })

    it('keys:write cannot be turned against another account or a stronger key: 404 and 403 on every operation', async () => {
      const victim = await operatorKey()
      const victimId = await server.keyId(victim)
      const attacker = (await make(await operatorKey(['pets:read', 'keys:read', 'keys:write'], 'free'), { scopes: ['keys:write'] })).body.key!
      const attempts = [
        ['GET', `/v1/keys/${victimId}`, undefined],
        ['PATCH', `/v1/keys/${victimId}`, { name: 'pwned' }],
        ['PATCH', `/v1/keys/${victimId}`, { enabled: false }],
        ['PATCH', `/v1/keys/${victimId}`, { scopes: [] }],
        ['POST', `/v1/keys/${victimId}/roll`, {}],
        ['POST', `/v1/keys/${victimId}/revoke`, undefined],
        ['POST', `/v1/keys/${victimId}/unban`, undefined],
        ['GET', `/v1/keys/${victimId}/usage`, undefined],
      ] as const
      for (const [method, path, json] of attempts) {
        const res = await server.request(path, { method, key: attacker, ...(json === undefined ? {} : { json }) })
        assert.equal(res.status, 404, `${method} ${path}: ${res.text}`)
      }
      const victimAccount = await server.accountId(victim)
      assert.ok((await server.request<ApiKey[]>('/v1/keys', { key: attacker })).body.every((key) => key.accountId !== victimAccount), 'the list holds its own account\'s keys alone')
      const view = await server.request<ApiKey>(`/v1/keys/${victimId}`, { key: victim })
      assert.equal(view.body.status, 'active')
      assert.equal(view.body.name, 'test')

      // Within its own account: never a key holding a scope it lacks.
      const boss = await operatorKey()
      const manager = (await make(boss, { scopes: ['keys:write', 'pets:read'] })).body.key!
      const bossId = await server.keyId(boss)
      for (const [method, path, json] of [
        ['PATCH', `/v1/keys/${bossId}`, { enabled: false }],
        ['POST', `/v1/keys/${bossId}/roll`, {}],
        ['POST', `/v1/keys/${bossId}/revoke`, undefined],
        ['POST', `/v1/keys/${bossId}/unban`, undefined],
      ] as const) {
        const res = await server.request<{ code: string; message: string }>(path, { method, key: manager, ...(json === undefined ? {} : { json }) })
        assert.equal(res.status, 403, `${method} ${path}: ${res.text}`)
        assert.equal(res.body.code, 'forbidden')
        assert.match(res.body.message, /holds .*orders:write.*which this key lacks/)
      }
      assert.equal((await server.request<ApiKey>(`/v1/keys/${bossId}`, { key: manager })).body.status, 'active')
      // A key may still revoke itself.
      assert.equal((await server.request<ApiKey>(`/v1/keys/${await server.keyId(manager)}/revoke`, { method: 'POST', key: manager })).body.status, 'revoked')
    })

    it('all keys of an account share one budget; the headers describe the account\'s windows', async () => {
      clock.set('2026-11-25T12:00:10Z')
      const first = await server.createKey('enterprise', { perMinute: 6, perDay: 1000 }, { scopes: SCOPES })
      const second = (await make(first, { scopes: ['pets:read'] })).body.key!
      const third = (await make(first, { scopes: ['pets:read'] })).body.key!
      // The two creates counted: 4 left in the minute, for whichever key asks.
      const statuses: number[] = []
      for (const key of [second, third, first, third, first]) statuses.push((await server.request('/v1/pets', { key })).status)
      assert.deepEqual(statuses, [200, 200, 200, 200, 429])
      const refused = await server.request('/v1/pets', { key: second })
      assert.equal(refused.status, 429)
      assert.equal(refused.headers.get('x-ratelimit-limit'), '6')
      assert.equal(refused.headers.get('x-ratelimit-remaining'), '0')
    })

    it('a key made by a key expires no later than its maker, dies with it on a cascade, and cannot lift its maker\'s ban', async () => {
      const owner = await operatorKey()
      const parent = (await make(owner, { scopes: SCOPES, expiresIn: '1h' })).body
      const child = (await make(parent.key!, { scopes: SCOPES })).body
      assert.equal(child.apiKey.expiresAt, parent.apiKey.expiresAt, 'expires with its maker by default')
      assert.equal(child.apiKey.createdBy, parent.apiKey.id)
      const later = await make(parent.key!, { expiresIn: '2h' })
      assert.equal(later.status, 403)
      assert.match((later.body as unknown as { message: string }).message, /outlives it/)
      const grandchild = (await make(child.key!, { scopes: ['pets:read', 'keys:write'] })).body
      const unrelated = (await make(owner, {})).body

      const unban = await server.request<{ message: string }>(`/v1/keys/${parent.apiKey.id}/unban`, { method: 'POST', key: child.key! })
      assert.equal(unban.status, 403, 'a key cannot lift its maker\'s ban')
      assert.match(unban.body.message, /made this key/)
      const own = await server.request(`/v1/keys/${child.apiKey.id}/unban`, { method: 'POST', key: child.key! })
      assert.equal(own.status, 403, 'nor its own')
      // A grandchild with every scope of the parent (the one above has fewer, and is refused for that).
      const heir = (await make(child.key!, { scopes: SCOPES })).body
      const byHeir = await server.request<{ message: string }>(`/v1/keys/${parent.apiKey.id}/unban`, { method: 'POST', key: heir.key! })
      assert.equal(byHeir.status, 403, "nor its maker's maker's: a key about to flood cannot make a grandchild to lift its ban")
      assert.match(byHeir.body.message, /made this key, or a key that made it/)
      // A roll of the child: its successor is the child's still, and the parent's.
      const successor = (await server.request<{ key: string; apiKey: ApiKey }>(`/v1/keys/${child.apiKey.id}/roll`, { method: 'POST', key: owner, json: { grace: 60 } })).body
      for (const banned of [child.apiKey.id, parent.apiKey.id]) {
        assert.equal((await server.request(`/v1/keys/${banned}/unban`, { method: 'POST', key: successor.key })).status, 403, `the successor of the child, for key ${banned}`)
      }
      const byPredecessor = await server.request<{ message: string }>(`/v1/keys/${successor.apiKey.id}/unban`, { method: 'POST', key: child.key! })
      assert.equal(byPredecessor.status, 403, 'nor the child, in its grace period, its successor\'s: a roll is the same credential')
      assert.match(byPredecessor.body.message, /is this key rolled/)
      assert.equal((await server.request(`/v1/keys/${grandchild.apiKey.id}/unban`, { method: 'POST', key: child.key! })).status, 200, 'a key may lift the ban of a key it made')

      const cascade = await server.request<ApiKey>(`/v1/keys/${parent.apiKey.id}/revoke?cascade=true`, { method: 'POST', key: owner })
      assert.equal(cascade.status, 200)
      assert.equal(cascade.headers.get('petstore-revoked'), [parent.apiKey.id, child.apiKey.id, grandchild.apiKey.id, heir.apiKey.id, successor.apiKey.id].join(','))
      pastCache()
      for (const key of [parent.key!, child.key!, grandchild.key!]) assert.equal((await other.request('/v1/pets', { key })).status, 401)
      assert.equal((await other.request('/v1/pets', { key: unrelated.key! })).status, 200, 'a key its maker did not make lives on')
      assert.equal(
        (await server.request<ApiKey[]>('/v1/keys?limit=100', { key: owner })).body.find((key) => key.id === grandchild.apiKey.id)?.createdBy,
        child.apiKey.id,
        'the list says who made each key',
      )
    })

    it('a cascade from a rolled key reaches what its predecessor made: a roll does not hide a leaked key\'s children', async () => {
      const owner = await operatorKey()
      const parent = (await make(owner, { scopes: SCOPES })).body
      const child = (await make(parent.key!, { scopes: ['pets:read'] })).body
      const rolled = await server.request<{ apiKey: ApiKey; key: string }>(`/v1/keys/${parent.apiKey.id}/roll`, { method: 'POST', key: owner, json: { grace: 3_600 } })
      assert.equal(rolled.status, 201, rolled.text)
      const successor = rolled.body.apiKey.id
      const cascade = await server.request(`/v1/keys/${successor}/revoke?cascade=true`, { method: 'POST', key: owner })
      assert.equal(cascade.status, 200, cascade.text)
      assert.equal(cascade.headers.get('petstore-revoked'), [parent.apiKey.id, child.apiKey.id, successor].sort((x, y) => x - y).join(','))
      pastCache()
      assert.equal((await other.request('/v1/pets', { key: child.key! })).status, 401)
    })

    it('a revoked key makes, rolls, changes and revokes no key where a cache still lets it through (401), so that the cascade that revoked it missed nothing', async () => {
      const owner = await operatorKey()
      const leaked = (await make(owner, { scopes: SCOPES })).body
      const sibling = (await make(owner, { scopes: ['pets:read'] })).body
      const before = (await other.request<Created>('/v1/keys', { method: 'POST', key: leaked.key!, json: { name: 'before' } })).body
      assert.equal(before.apiKey.createdBy, leaked.apiKey.id, 'the other instance has the leaked key cached, as its holder keeps it busy')
      const revoked = await server.request(`/v1/keys/${leaked.apiKey.id}/revoke?cascade=true`, { method: 'POST', key: owner })
      assert.equal(revoked.headers.get('petstore-revoked'), [leaked.apiKey.id, before.apiKey.id].join(','))
      // Within the other instance's cache lifetime: its reads still pass (D6), its keys do not.
      assert.equal((await other.request('/v1/pets', { key: leaked.key! })).status, 200, 'the cache still lets it through')
      for (const [what, res] of [
        ['make', await other.request<{ code: string; message: string }>('/v1/keys', { method: 'POST', key: leaked.key!, json: { name: 'after' } })],
        ['roll', await other.request<{ code: string; message: string }>(`/v1/keys/${sibling.apiKey.id}/roll`, { method: 'POST', key: leaked.key!, json: { grace: 0 } })],
        ['change', await other.request<{ code: string; message: string }>(`/v1/keys/${sibling.apiKey.id}`, { method: 'PATCH', key: leaked.key!, json: { enabled: false } })],
        ['revoke', await other.request<{ code: string; message: string }>(`/v1/keys/${sibling.apiKey.id}/revoke`, { method: 'POST', key: leaked.key! })],
      ] as const) {
        assert.equal(res.status, 401, `${what}: ${res.text}`)
        assert.equal(res.body.code, 'unauthorized', what)
        assert.match(res.body.message, /is no longer active: it was revoked, expired or disabled .* Nothing was changed\./, what)
        assert.match(res.headers.get('www-authenticate') ?? '', /error="invalid_token"/, what)
      }
      const keys = (await server.request<ApiKey[]>('/v1/keys?limit=100', { key: owner })).body
      assert.deepEqual(keys.filter((key) => key.createdBy === leaked.apiKey.id).map((key) => key.id), [before.apiKey.id], 'nothing made after the revoke')
      assert.equal(keys.find((key) => key.id === sibling.apiKey.id)?.replacedBy, null, 'nothing rolled')
      assert.equal(keys.find((key) => key.id === sibling.apiKey.id)?.status, 'active', 'nothing disabled or revoked')
    })

    it('a key narrowed on one instance makes, rolls, changes and revokes no key on another whose cache still has its old scopes (403): judged as it stands', async () => {
      const owner = await operatorKey()
      const narrowed = (await make(owner, { scopes: SCOPES })).body
      const sibling = (await make(owner, { scopes: ['pets:read'] })).body
      assert.equal((await other.request('/v1/account', { key: narrowed.key! })).status, 200, 'cached on the other instance')
      const patched = await server.request(`/v1/keys/${narrowed.apiKey.id}`, { method: 'PATCH', key: owner, json: { scopes: ['pets:read', 'keys:read'] } })
      assert.equal(patched.status, 200, patched.text)
      for (const [what, res] of [
        ['make', await other.request<{ code: string; message: string }>('/v1/keys', { method: 'POST', key: narrowed.key!, json: { name: 'after', scopes: ['pets:read', 'keys:write'] } })],
        ['roll', await other.request<{ code: string; message: string }>(`/v1/keys/${narrowed.apiKey.id}/roll`, { method: 'POST', key: narrowed.key!, json: { grace: 0 } })],
        ['change', await other.request<{ code: string; message: string }>(`/v1/keys/${sibling.apiKey.id}`, { method: 'PATCH', key: narrowed.key!, json: { enabled: false } })],
        ['revoke', await other.request<{ code: string; message: string }>(`/v1/keys/${sibling.apiKey.id}/revoke`, { method: 'POST', key: narrowed.key! })],
      ] as const) {
        assert.equal(res.status, 403, `${what}: ${res.text}`)
        assert.equal(res.body.code, 'insufficient_scope', what)
        assert.match(res.body.message, /lacks the keys:write scope .* its scopes are pets:read, keys:read\./, what)
      }
      const keys = (await server.request<ApiKey[]>('/v1/keys?limit=100', { key: owner })).body
      assert.deepEqual(keys.filter((key) => key.createdBy === narrowed.apiKey.id), [], 'nothing made')
      assert.equal(keys.find((key) => key.id === narrowed.apiKey.id)?.replacedBy, null, 'nothing rolled')
      assert.equal(keys.find((key) => key.id === sibling.apiKey.id)?.status, 'active', 'nothing disabled or revoked')
    })

    it('a key narrowed while its make or roll is being written is refused in the write\'s transaction (403), and nothing is made', async () => {
      const owner = await operatorKey()
      const maker = (await make(owner, { scopes: SCOPES })).body
      const apiKeys = server.store.apiKeys
      const [insert, roll] = [apiKeys.insert, apiKeys.roll]
      // The owner's PATCH commits after the maker was read as acting, before its write.
      const narrowFirst = async () => void (await apiKeys.update(maker.apiKey.id, { scopes: 'pets:read keys:read' }))
      apiKeys.insert = async (...args) => (await narrowFirst(), insert.apply(apiKeys, args))
      apiKeys.roll = async (...args) => (await narrowFirst(), roll.apply(apiKeys, args))
      try {
        for (const [what, res] of [
          ['make', await server.request<{ code: string }>('/v1/keys', { method: 'POST', key: maker.key!, json: { name: 'during', scopes: ['pets:read'] } })],
          ['roll', await server.request<{ code: string }>(`/v1/keys/${maker.apiKey.id}/roll`, { method: 'POST', key: maker.key!, json: { grace: 0 } })],
        ] as const) {
          assert.equal(res.status, 403, `${what}: ${res.text}`)
          assert.equal(res.body.code, 'insufficient_scope', what)
          assert.match(res.headers.get('www-authenticate') ?? '', /scope="keys:write"/, what)
          // Between the two, the maker's scopes are put back, for the roll to be read as acting.
          await apiKeys.update(maker.apiKey.id, { scopes: SCOPES.join(' ') })
        }
      } finally {
        Object.assign(apiKeys, { insert, roll })
      }
      const keys = (await server.request<ApiKey[]>('/v1/keys?limit=100', { key: owner })).body
      assert.deepEqual(keys.filter((key) => key.createdBy === maker.apiKey.id), [], 'nothing made')
      assert.equal(keys.find((key) => key.id === maker.apiKey.id)?.replacedBy, null, 'nothing rolled')
    })

    it('a cascading revoke that reaches a key holding a scope the caller lacks is 403, and revokes nothing', async () => {
      const owner = await operatorKey()
      const maker = (await make(owner, { scopes: SCOPES })).body
      const made = (await make(maker.key!, { scopes: SCOPES })).body
      const narrow = (await make(owner, { scopes: ['pets:read', 'keys:read', 'keys:write'] })).body
      // The maker is narrowed later: within the narrow key's reach, what it made is not.
      assert.equal((await server.request(`/v1/keys/${maker.apiKey.id}`, { method: 'PATCH', key: owner, json: { scopes: ['pets:read'] } })).status, 200)
      assert.equal((await server.request(`/v1/keys/${made.apiKey.id}/revoke`, { method: 'POST', key: narrow.key! })).status, 403, 'as revoking that key alone is')
      const cascade = await server.request<{ code: string; message: string }>(`/v1/keys/${maker.apiKey.id}/revoke?cascade=true`, { method: 'POST', key: narrow.key! })
      assert.equal(cascade.status, 403, cascade.text)
      assert.equal(cascade.body.code, 'forbidden')
      assert.match(cascade.body.message, new RegExp(`reaches key ${made.apiKey.id}, holding scopes this key lacks`))
      for (const id of [maker.apiKey.id, made.apiKey.id]) assert.equal((await server.request<ApiKey>(`/v1/keys/${id}`, { key: owner })).body.revokedAt, null, `key ${id} not revoked`)
      assert.equal((await server.request(`/v1/keys/${maker.apiKey.id}/revoke`, { method: 'POST', key: narrow.key! })).status, 200, 'the maker alone is within its reach')
    })

    it('an account\'s keys make at most PETSTORE_MAX_KEYS live keys (409 key_limit_reached), however many ask at once; a revoked or expired one frees its place, a roll is held to twice it, the operator to neither', async () => {
      const capped = await startTestServer({ store: 'sqlite', clock, env: { DATABASE_URL: server.config.databaseUrl, PETSTORE_MAX_KEYS: '4' } })
      try {
        const owner = await operatorKey()
        const makeOn = (instance: TestServer, json: object = { scopes: SCOPES }) => instance.request<Created & { code?: string; message?: string }>('/v1/keys', { method: 'POST', key: owner, json })
        // The owner's key is live: three more fit, asked at once on two instances sharing the cap.
        const asked = await Promise.all([capped, capped, capped, capped, capped, capped].map((instance) => makeOn(instance)))
        assert.deepEqual(asked.map((res) => `${res.status}${res.body.code ? ` ${res.body.code}` : ''}`).sort(), ['201', '201', '201', '409 key_limit_reached', '409 key_limit_reached', '409 key_limit_reached'])
        assert.match(asked.find((res) => res.status === 409)!.body.message!, /^The account has 4 live keys/)
        const made = asked.filter((res) => res.status === 201).map((res) => res.body)
        const live = async () => (await server.request<ApiKey[]>('/v1/keys?limit=100', { key: owner })).body.filter((key) => key.status === 'active').length
        assert.equal(await live(), 4, 'nothing made past the cap')
        assert.equal((await capped.request(`/v1/keys/${made[2]!.apiKey.id}/roll`, { method: 'POST', key: owner, json: { grace: 60 } })).status, 201, 'a roll is not counted')
        assert.equal((await capped.request(`/v1/keys/${made[1]!.apiKey.id}/revoke`, { method: 'POST', key: owner })).status, 200)
        assert.equal((await makeOn(capped)).status, 409, 'the roll\'s old key is live until its grace ends')
        clock.advance(61_000)
        assert.equal((await makeOn(capped, { expiresIn: '1h' })).status, 201, 'its place is free once it ends')
        assert.equal((await makeOn(capped)).status, 409)
        clock.advance(3_600_000)
        const last = await makeOn(capped)
        assert.equal(last.status, 201, 'an expired key frees its place')
        for (let i = 0; i < 2; i++) await server.createKey('free', {}, { accountId: await server.accountId(owner) })
        assert.equal(await live(), 6, 'the operator is not held to it')
        // Each roll with a grace period leaves one more key live: a key rolls while the account has fewer than twice the cap.
        let newest = last.body.apiKey.id
        const rolls: string[] = []
        for (let i = 0; i < 3; i++) {
          const rolled = await capped.request<Created & { code?: string; message?: string }>(`/v1/keys/${newest}/roll`, { method: 'POST', key: owner, json: { grace: 604_800 } })
          rolls.push(`${rolled.status}${rolled.body.code ? ` ${rolled.body.code}` : ''}`)
          if (rolled.status === 201) newest = rolled.body.apiKey.id
          else assert.match(rolled.body.message!, /^The account has 8 live keys .* those still in a roll's grace period included/)
        }
        assert.deepEqual(rolls, ['201', '201', '409 key_limit_reached'])
        assert.equal(await live(), 8)
        const now = await capped.request(`/v1/keys/${newest}/roll`, { method: 'POST', key: owner, json: { grace: 0 } })
        assert.equal(now.status, 201, `a roll with no grace adds no live key, at the cap too: ${now.text}`)
        assert.equal(await live(), 8)
      } finally {
        await capped.close()
      }
    })

    it('disabling an account refuses every key of it on every instance', async () => {
      const owner = await operatorKey()
      const sibling = (await make(owner, {})).body.key!
      await server.store.accounts.update(await server.accountId(owner), { disabledAt: clock.now() })
      pastCache()
      for (const key of [owner, sibling]) {
        const res = await other.request<{ message: string }>('/v1/pets', { key })
        assert.equal(res.status, 401)
        assert.match(res.body.message, /account .* is disabled/)
        assert.match(res.headers.get('www-authenticate') ?? '', /error_description="The account is disabled"/)
      }
    })
  })
}
