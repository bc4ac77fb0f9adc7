import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createManualClock } from '../src/clock.js'
import type { Pet } from '../src/schemas/pet.js'
import { STORES, startTestServer, type Reply, type TestServer } from './helpers/server.js'

function assertDeprecationHeaders(res: Reply) {
  // RFC 9745: an @-prefixed Unix time; RFC 8594: an HTTP date.
  assert.match(res.headers.get('deprecation') ?? '', /^@\d+$/)
  assert.equal(res.headers.get('sunset'), 'Thu, 05 Dec 2030 00:00:00 GMT')
  assert.equal(res.headers.get('link'), '</v1/pets>; rel="successor-version"')
}

for (const store of STORES) describe(`the deprecated GET /v1/pets/{petId} (${store})`, () => {
  const clock = createManualClock('2030-12-04T23:59:59.000Z')
  let server: TestServer
  let key: string
  let pet: Pet
  before(async () => {
    server = await startTestServer({ store, clock })
    key = await server.createKey('enterprise', { perMinute: 10_000, perDay: 100_000 })
    pet = (await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: 'Old', categoryId: 1 } })).body
  })
  after(() => server.close())

  it('carries Deprecation, Sunset and a Link to the replacement on every response', async () => {
    const ok = await server.request(`/v1/pets/${pet.id}`, { key })
    assert.equal(ok.status, 200)
    assertDeprecationHeaders(ok)
    assertDeprecationHeaders(await server.request('/v1/pets/424242', { key })) // 404
    assertDeprecationHeaders(await server.request('/v1/pets/abc', { key })) // 400
    assertDeprecationHeaders(await server.request(`/v1/pets/${pet.id}`)) // 401
  })

  it('the deprecation date lies before the sunset', async () => {
    const res = await server.request(`/v1/pets/${pet.id}`, { key })
    const deprecatedAt = Number(res.headers.get('deprecation')!.slice(1)) * 1000
    assert.ok(deprecatedAt < Date.parse(res.headers.get('sunset')!))
  })

  it('other operations carry no deprecation headers', async () => {
    const res = await server.request('/v1/pets', { key })
    assert.equal(res.headers.get('deprecation'), null)
    assert.equal(res.headers.get('sunset'), null)
  })

  it('answers 410 gone naming the replacement from 5 December 2030, 00:00:00 UTC', async () => {
    clock.set('2030-12-04T23:59:59.999Z')
    assert.equal((await server.request(`/v1/pets/${pet.id}`, { key })).status, 200)
    clock.set('2030-12-05T00:00:00.000Z')
    const gone = await server.request(`/v1/pets/${pet.id}`, { key })
    assert.equal(gone.status, 410)
    assert.equal((gone.body as { code: string }).code, 'gone')
    assert.match((gone.body as { message: string }).message, /GET \/v1\/pets/)
    assertDeprecationHeaders(gone)
    // Every call, even one with a malformed id; the replacement keeps working.
    assert.equal((await server.request('/v1/pets/abc', { key })).status, 410)
    assert.equal((await server.request('/v1/pets', { key })).status, 200)
  })

  it('still asks for a key after the sunset', async () => {
    clock.set('2031-01-01T00:00:00Z')
    assert.equal((await server.request(`/v1/pets/${pet.id}`)).status, 401)
  })
})
