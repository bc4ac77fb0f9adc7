import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createManualClock } from '../src/clock.js'
import type { Pet } from '../src/schemas/pet.js'
import { V1_OPERATIONS } from './helpers/operations.js'
import { UNLIMITED } from './helpers/keys.js'
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
    key = await server.createKey('enterprise', UNLIMITED)
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

  it('names in Sunset the moment it starts answering 410, and in Deprecation a past date before it', async () => {
    clock.set('2026-11-22T12:00:00Z') // the day v1.0.0 was released with getPet deprecated
    const res = await server.request(`/v1/pets/${pet.id}`, { key })
    assert.equal(res.status, 200)
    // RFC 9745 §2.1: a Structured Field Date (RFC 9651 §3.3.7), "@" and integer seconds.
    const deprecation = /^@(-?\d{1,15})$/.exec(res.headers.get('deprecation') ?? '')
    assert.ok(deprecation, `Deprecation is a Structured Field Date: ${res.headers.get('deprecation')}`)
    const deprecatedAt = Number(deprecation[1]) * 1000
    assert.ok(deprecatedAt <= clock.now(), 'a date already passed: a future one would announce a deprecation still to come')
    // RFC 8594 §3: an HTTP-date, in the IMF-fixdate form RFC 9110 §5.6.7 requires of senders.
    const sunset = res.headers.get('sunset') ?? ''
    assert.match(sunset, /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/)
    const sunsetAt = Date.parse(sunset)
    assert.ok(deprecatedAt < sunsetAt, 'RFC 9745 §3: the Sunset is not earlier than the Deprecation')
    clock.set(sunsetAt - 1)
    assert.equal((await server.request(`/v1/pets/${pet.id}`, { key })).status, 200, 'served until the Sunset')
    clock.set(sunsetAt)
    assert.equal((await server.request(`/v1/pets/${pet.id}`, { key })).status, 410, 'gone from the Sunset on')
    clock.set('2030-12-04T23:59:59.000Z')
  })

  for (const { operationId, method, example, body } of V1_OPERATIONS.filter((op) => !op.deprecated)) {
    it(`${operationId} carries no deprecation headers`, async () => {
      const res = await server.request(example, { method, key, json: body })
      assert.notEqual(res.status, 401, res.text) // answered by the operation, not refused before it
      for (const name of ['deprecation', 'sunset']) assert.equal(res.headers.get(name), null, name)
    })
  }

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
