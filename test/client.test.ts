// The typed client (`petstore/client`), against a real server.
// Retries are proved with an injected fetch that fails on purpose, or a tiny
// scripted node:http server; waits go through an injected sleep, never a timer.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createClient, PetstoreError, PetstoreNetworkError, type ClientOptions, type ListPetsOptions, type Pet } from '../src/client/index.js'
import { normalizeBaseUrl } from '../src/client/base-url.js'
import { createManualClock } from '../src/clock.js'
import { errorBody, flakyFetch, recordingSleep, rejectsWith, scriptedServer } from './helpers/client-fakes.js'
import { UNLIMITED } from './helpers/keys.js'
import { createConsumerProject, run, ROOT, type ConsumerProject } from './helpers/consumer-project.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

// Every warning of this process: the deprecation warning is promised once per process.
const warnings: (Error & { code?: string })[] = []
process.on('warning', (warning) => warnings.push(warning))

describe('typed client: operations', () => {
  let server: TestServer
  let key: string
  let options: ClientOptions
  before(async () => {
    server = await startTestServer()
    key = await server.createKey('enterprise', UNLIMITED)
    options = { baseUrl: server.url, apiKey: key }
  })
  after(() => server.close())

  it('creates, lists and gets pets, returning them as the schemas type them', async () => {
    const client = createClient(options)
    const created: Pet = await client.createPet({ name: 'Rex', categoryId: 7, status: 'sold' })
    assert.deepEqual(created, { id: created.id, name: 'Rex', categoryId: 7, status: 'sold' })
    const page = await client.listPets({ status: 'sold', limit: 100 })
    assert.ok(page.pets.some((pet) => pet.id === created.id))
    assert.equal(page.nextCursor, undefined)
    assert.equal(page.rateLimit?.limit, UNLIMITED.perMinute)
    assert.equal(typeof page.rateLimit?.remaining, 'number')
    assert.ok(page.rateLimit!.reset > Date.now() / 1000)
    assert.ok(page.requestId)
    assert.deepEqual(await client.getPet(created.id), created)
  })

  it('updates a pet with a merge patch, returning it with its ETag, and deletes it, each conditional on ifMatch', async () => {
    const client = createClient(options)
    const pet = await client.createPet({ name: 'Patchy', categoryId: 2, status: 'pending' })
    const first = await client.updatePet(pet.id, { status: 'available' })
    assert.deepEqual(first.pet, { ...pet, status: 'available' })
    assert.match(first.etag!, /^"/)
    const second = await client.updatePet(pet.id, { name: 'Patched' }, { ifMatch: first.etag! })
    assert.equal(second.pet.name, 'Patched')
    const stale = await rejectsWith(client.updatePet(pet.id, { name: 'Late' }, { ifMatch: first.etag! }), PetstoreError)
    assert.equal(stale.status, 412)
    assert.equal(stale.code, 'precondition_failed')
    assert.equal(stale.attempts, 1, 'a refusal is not retried')
    await client.deletePet(pet.id, { ifMatch: second.etag! })
    const gone = await rejectsWith(client.getPet(pet.id), PetstoreError)
    assert.equal(gone.code, 'not_found')
  })

  it('reads a pet with its ETag through listPets({ ids }), not the deprecated getPet, and changes it only at that version', async () => {
    const requests: string[] = []
    const client = createClient({ ...options, fetch: (input, init) => (requests.push(`${init?.method ?? 'GET'} ${String(input)}`), fetch(input, init)) })
    const pet = await client.createPet({ name: 'Versioned', categoryId: 3 })
    const read = await client.listPets({ ids: [pet.id] })
    assert.deepEqual(read.pets, [pet])
    const etag = read.etags?.[pet.id]
    assert.match(etag ?? '', /^"/)
    const saved = await client.updatePet(pet.id, { name: 'Versioned twice' }, { ifMatch: etag! })
    assert.notEqual(saved.etag, etag)
    // Read again: the version the last change made. The first one is stale now.
    assert.equal((await client.listPets({ ids: [pet.id] })).etags?.[pet.id], saved.etag)
    const stale = await rejectsWith(client.updatePet(pet.id, { name: 'Late' }, { ifMatch: etag! }), PetstoreError)
    assert.equal(stale.code, 'precondition_failed')
    assert.deepEqual(
      requests.filter((request) => /^GET .*\/pets\/\d+$/.test(request)),
      [],
      'no GET /v1/pets/{id}',
    )
    // A pet that is not there: an empty page, no ETag.
    const none = await client.listPets({ ids: [424_242] })
    assert.deepEqual([none.pets, none.etags?.[424_242]], [[], undefined])
  })

  it('retries updatePet after a network failure, but neither updatePet with ifMatch nor deletePet', async () => {
    const pet = await createClient(options).createPet({ name: 'Flaky', categoryId: 2 })
    const sleep = recordingSleep()
    const retried = flakyFetch((call) => (call === 1 ? 'after-response' : false))
    await createClient({ ...options, fetch: retried.fetch, sleep: sleep.sleep }).updatePet(pet.id, { name: 'Again' })
    assert.equal(retried.seen.length, 2)
    for (const call of [
      (client: ReturnType<typeof createClient>) => client.updatePet(pet.id, { name: 'Once' }, { ifMatch: '*' }),
      (client: ReturnType<typeof createClient>) => client.deletePet(pet.id),
    ]) {
      const once = flakyFetch((call) => (call === 1 ? 'after-response' : false))
      await rejectsWith(call(createClient({ ...options, fetch: once.fetch, sleep: sleep.sleep })), PetstoreNetworkError)
      assert.equal(once.seen.length, 1)
    }
  })

  it('walks every page in order with allPets, following the Link cursors', async () => {
    const client = createClient(options)
    const ids: number[] = []
    for (let i = 1; i <= 7; i++) ids.push((await client.createPet({ name: `Page pet ${i}`, categoryId: 3, status: 'pending' })).id)
    const traced = flakyFetch()
    const walked: Pet[] = []
    for await (const pet of createClient({ ...options, fetch: traced.fetch }).allPets({ status: 'pending', limit: 3 })) walked.push(pet)
    assert.deepEqual(
      walked.map((pet) => pet.id),
      ids,
    )
    assert.ok(walked.every((pet) => pet.status === 'pending'))
    // Three pages of 3, 3 and 1; the later ones ask for the cursor and keep the filters.
    assert.equal(traced.seen.length, 3)
    for (const { url } of traced.seen.slice(1)) assert.match(url, /\/v1\/pets\?limit=3&status=pending&cursor=/)
    const first = await client.listPets({ status: 'pending', limit: 3 })
    assert.equal(first.pets.length, 3)
    assert.ok(first.nextCursor)
    const second = await client.listPets({ status: 'pending', limit: 3, cursor: first.nextCursor })
    assert.deepEqual(
      second.pets.map((pet) => pet.id),
      ids.slice(3, 6),
    )
  })

  it('refuses an option listPets does not take, as the API refuses a query parameter, and answers an empty list filter with no pets, unasked', async () => {
    const traced = flakyFetch()
    const client = createClient({ ...options, fetch: traced.fetch })
    // A JavaScript caller, or a variable past TypeScript's excess-property check.
    const misspelt = { stauts: 'sold' } as ListPetsOptions
    await assert.rejects(client.listPets(misspelt), (error: unknown) => error instanceof TypeError && /listPets: unknown option "stauts"; it takes limit, status, categoryId/.test(error.message))
    for (const empty of [{ ids: [] }, { categoryId: [] }, { status: [] }] as ListPetsOptions[]) {
      const page = await client.listPets(empty)
      assert.deepEqual([page.pets, page.nextCursor], [[], undefined], JSON.stringify(empty))
    }
    assert.equal(traced.seen.length, 0, 'nothing was sent')
  })

  it('accepts a base URL with or without /v1 and with trailing slashes', async () => {
    assert.equal(normalizeBaseUrl('http://host:8080'), 'http://host:8080/v1')
    assert.equal(normalizeBaseUrl('http://host:8080/'), 'http://host:8080/v1')
    assert.equal(normalizeBaseUrl('http://host:8080/v1/'), 'http://host:8080/v1')
    assert.equal(normalizeBaseUrl('https://api.petstore.example/v1'), 'https://api.petstore.example/v1')
    assert.equal(normalizeBaseUrl('https://example.com/api//'), 'https://example.com/api/v1')
    assert.throws(() => createClient({ ...options, baseUrl: 'not a url' }), /baseUrl is not a URL/)
    assert.throws(() => createClient({ ...options, baseUrl: 'ftp://host' }), /http: or https:/)
    for (const baseUrl of [server.url, `${server.url}/`, `${server.url}/v1`, `${server.url}/v1/`]) {
      assert.ok(Array.isArray((await createClient({ ...options, baseUrl }).listPets({ limit: 1 })).pets), baseUrl)
    }
  })

  it('throws PetstoreError with status, code, message, rate-limit state and request id on a 401', async () => {
    const error = await rejectsWith(createClient({ ...options, apiKey: 'ps_test_wrong' }).listPets(), PetstoreError)
    assert.equal(error.status, 401)
    assert.equal(error.code, 'unauthorized')
    assert.equal(error.operation, 'listPets')
    assert.match(error.message, /key/i)
    assert.equal(error.rateLimit?.limit, 60) // callers without a valid key get the free plan's numbers
    assert.equal(typeof error.rateLimit?.remaining, 'number')
    assert.ok(error.requestId)
    assert.equal(error.attempts, 1)
  })

  it('throws PetstoreError with details on a 400, without retrying it', async () => {
    const traced = flakyFetch()
    const client = createClient({ ...options, fetch: traced.fetch })
    const error = await rejectsWith(client.createPet({ name: '', categoryId: 1 }), PetstoreError)
    assert.equal(error.status, 400)
    assert.equal(error.code, 'invalid_field')
    assert.match(error.message, /name/)
    assert.ok(error.details?.some((detail) => detail.field === 'name'))
    assert.equal(error.rateLimit?.limit, UNLIMITED.perMinute)
    assert.equal(traced.seen.length, 1)
    const badLimit = await rejectsWith(client.listPets({ limit: 0 }), PetstoreError)
    assert.equal(badLimit.code, 'invalid_parameter')
    assert.equal(traced.seen.length, 2)
  })

  it('throws not_found for a pet that does not exist', async () => {
    const error = await rejectsWith(createClient(options).getPet(424_242), PetstoreError)
    assert.equal(error.status, 404)
    assert.equal(error.code, 'not_found')
    assert.equal(error.operation, 'getPet')
  })

  it('warns once per process that getPet is deprecated, quoting the Sunset date', async () => {
    const client = createClient(options)
    const pet = await client.createPet({ name: 'Old', categoryId: 1 })
    await client.getPet(pet.id)
    await client.getPet(pet.id)
    await createClient(options).getPet(pet.id) // another client: still the same process
    await new Promise((resolve) => setImmediate(resolve)) // warnings are emitted on the next tick
    const deprecations = warnings.filter((warning) => warning.code === 'PETSTORE_DEPRECATED_GETPET')
    assert.equal(deprecations.length, 1)
    assert.equal(deprecations[0]!.name, 'DeprecationWarning')
    assert.match(deprecations[0]!.message, /getPet is deprecated.*Thu, 05 Dec 2030 00:00:00 GMT.*listPets/)
    // No other operation warns.
    assert.deepEqual(
      warnings.map((warning) => warning.code).filter((code) => code?.startsWith('PETSTORE_')),
      ['PETSTORE_DEPRECATED_GETPET'],
    )
  })
})

describe('typed client: rate limits', () => {
  const clock = createManualClock('2026-11-22T10:00:45.000Z')
  let server: TestServer
  before(async () => {
    server = await startTestServer({ clock, env: { PETSTORE_BAN_AFTER: '2', PETSTORE_BAN_SECONDS: '45' } })
  })
  after(() => server.close())

  /** A client whose waits move the server's clock: "waiting" crosses the window for real. */
  function clientFor(apiKey: string, options: Partial<ClientOptions> = {}) {
    const recorded = recordingSleep((ms) => clock.advance(ms))
    return { client: createClient({ baseUrl: server.url, apiKey, sleep: recorded.sleep, random: () => 0.5, ...options }), waits: recorded.waits }
  }

  it('waits out a 429 for the Retry-After the server gave, then succeeds', async () => {
    clock.set('2026-11-22T10:00:45.000Z')
    const key = await server.createKey('enterprise', { perMinute: 2, perDay: 1000 })
    for (let i = 0; i < 2; i++) assert.equal((await server.request('/v1/pets', { key })).status, 200)
    const { client, waits } = clientFor(key)
    const page = await client.listPets()
    assert.deepEqual(waits, [15_000]) // to the end of the UTC minute
    assert.equal(clock.now(), Date.parse('2026-11-22T10:01:00.000Z'))
    assert.deepEqual(page.rateLimit, { limit: 2, remaining: 1, reset: Date.parse('2026-11-22T10:02:00Z') / 1000 })
  })

  it('gives up at once when Retry-After exceeds maxRetryAfterSeconds: a daily quota waits until midnight', async () => {
    clock.set('2026-11-22T23:00:00.000Z')
    const key = await server.createKey('enterprise', { perMinute: 2, perDay: 2 })
    for (let i = 0; i < 2; i++) assert.equal((await server.request('/v1/pets', { key })).status, 200)
    const { client, waits } = clientFor(key)
    const error = await rejectsWith(client.listPets(), PetstoreError)
    assert.deepEqual(waits, [])
    assert.equal(error.status, 429)
    assert.equal(error.code, 'rate_limited')
    assert.equal(error.retryAfter, 3600)
    assert.equal(error.attempts, 1)
    assert.match(error.message, /Daily quota/)
    assert.match(error.message, /Retry-After is 3600 s, longer than maxRetryAfterSeconds \(60 s\)/)
    assert.deepEqual(error.rateLimit, { limit: 2, remaining: 0, reset: Date.parse('2026-11-23T00:00:00Z') / 1000 })
    // A caller who accepts the wait gets through at midnight.
    const patient = clientFor(key, { maxRetryAfterSeconds: 3600 })
    assert.ok(Array.isArray((await patient.client.listPets()).pets))
    assert.deepEqual(patient.waits, [3_600_000])
  })

  /** Runs a key into a ban: one served, then refusals until the third crosses PETSTORE_BAN_AFTER=2. */
  async function bannedKey(): Promise<string> {
    const key = await server.createKey('enterprise', { perMinute: 1, perDay: 1000 })
    assert.equal((await server.request('/v1/pets', { key })).status, 200)
    for (let i = 0; i < 2; i++) assert.equal((await server.request<{ code: string }>('/v1/pets', { key })).body.code, 'rate_limited')
    assert.equal((await server.request<{ code: string }>('/v1/pets', { key })).body.code, 'key_banned')
    return key
  }

  it('honours key_banned: waits out the ban (45 s, under the 60 s maximum), then succeeds', async () => {
    clock.set('2026-11-23T10:00:30.000Z')
    const { client, waits } = clientFor(await bannedKey())
    const pet = await client.createPet({ name: 'Patient', categoryId: 1 })
    assert.equal(pet.name, 'Patient')
    assert.deepEqual(waits, [45_000])
  })

  it('gives up on key_banned when the ban outlasts maxRetryAfterSeconds', async () => {
    clock.set('2026-11-24T10:00:30.000Z')
    const { client, waits } = clientFor(await bannedKey(), { maxRetryAfterSeconds: 30 })
    const error = await rejectsWith(client.listPets(), PetstoreError)
    assert.equal(error.code, 'key_banned')
    assert.equal(error.retryAfter, 45)
    assert.match(error.message, /banned until .*maxRetryAfterSeconds \(30 s\)/)
    assert.deepEqual(waits, [])
  })
})

describe('typed client: retries', () => {
  let server: TestServer
  let options: ClientOptions
  before(async () => {
    server = await startTestServer()
    options = { baseUrl: server.url, apiKey: await server.createKey('enterprise', UNLIMITED) }
  })
  after(() => server.close())

  it('retries a GET after network errors, with full-jitter backoff, and returns the page', async () => {
    const traced = flakyFetch((call) => (call <= 2 ? 'before' : false))
    const { sleep, waits } = recordingSleep()
    const page = await createClient({ ...options, fetch: traced.fetch, sleep, random: () => 0.5 }).listPets()
    assert.ok(Array.isArray(page.pets))
    assert.equal(traced.seen.length, 3)
    // random · min(cap, base · 2^(retry-1)) with base 1 s: half of 1 s, then half of 2 s.
    assert.deepEqual(waits, [500, 1000])
  })

  it('retries a GET after a 503, waiting its Retry-After, and after 500/502 with backoff', async () => {
    const scripted = await scriptedServer([
      { status: 503, headers: { 'retry-after': '2' }, body: errorBody(503, 'service_unavailable') },
      { status: 500, body: errorBody(500, 'internal_error') },
      { status: 502, raw: '<html>Bad Gateway</html>' },
      { status: 200, body: [{ id: 1, name: 'Rex', categoryId: 1, status: 'available' }] },
    ])
    try {
      const { sleep, waits } = recordingSleep()
      const page = await createClient({ baseUrl: scripted.url, apiKey: 'k', sleep, random: () => 0.25 }).listPets()
      assert.equal(page.pets[0]?.name, 'Rex')
      assert.deepEqual(waits, [2000, 500, 1000]) // Retry-After, then a quarter of 2 s and of 4 s
      assert.equal(scripted.seen.length, 4)
    } finally {
      await scripted.close()
    }
  })

  it('backs off with full jitter on a 429 that carries no Retry-After', async () => {
    const scripted = await scriptedServer([{ status: 429, body: errorBody(429, 'rate_limited') }, { status: 200, body: [] }])
    try {
      const { sleep, waits } = recordingSleep()
      await createClient({ baseUrl: scripted.url, apiKey: 'k', sleep, random: () => 0.9 }).listPets()
      assert.deepEqual(waits, [900])
    } finally {
      await scripted.close()
    }
  })

  it('retries createPet after a network error with the same generated Idempotency-Key (a UUID)', async () => {
    const traced = flakyFetch((call) => (call === 1 ? 'before' : false))
    const { sleep } = recordingSleep()
    const pet = await createClient({ ...options, fetch: traced.fetch, sleep }).createPet({ name: 'Retried', categoryId: 1 })
    assert.equal(pet.name, 'Retried')
    const keys = traced.seen.map((request) => request.headers.get('idempotency-key'))
    assert.equal(keys.length, 2)
    assert.match(keys[0]!, UUID)
    assert.equal(keys[1], keys[0])
    // Each call has a key of its own.
    const again = flakyFetch()
    await createClient({ ...options, fetch: again.fetch }).createPet({ name: 'Retried', categoryId: 1 })
    assert.notEqual(again.seen[0]!.headers.get('idempotency-key'), keys[0])
  })

  it("sends the caller's Idempotency-Key on every attempt", async () => {
    const traced = flakyFetch((call) => (call <= 2 ? 'before' : false))
    const { sleep } = recordingSleep()
    const idempotencyKey = `order-${randomUUID()}`
    await createClient({ ...options, fetch: traced.fetch, sleep }).createPet({ name: 'Keyed', categoryId: 1 }, { idempotencyKey })
    assert.deepEqual(
      traced.seen.map((request) => request.headers.get('idempotency-key')),
      [idempotencyKey, idempotencyKey, idempotencyKey],
    )
  })

  it('does not retry createPet sent without an idempotency key: a lost answer may hide a created pet', async () => {
    const traced = flakyFetch((call) => (call === 1 ? 'before' : false))
    const { sleep, waits } = recordingSleep()
    const client = createClient({ ...options, fetch: traced.fetch, sleep })
    const error = await rejectsWith(client.createPet({ name: 'Once', categoryId: 1 }, { idempotencyKey: false }), PetstoreNetworkError)
    assert.equal(error.attempts, 1)
    assert.match(error.message, /createPet: no answer from .*\/v1\/pets: fetch failed: connect ECONNREFUSED/)
    assert.equal(traced.seen.length, 1)
    assert.equal(traced.seen[0]!.headers.get('idempotency-key'), null)
    assert.deepEqual(waits, [])

    // A 503 outcome_unknown may hide a created pet: not retried without a key.
    const scripted = await scriptedServer([{ status: 503, body: errorBody(503, 'outcome_unknown') }, { status: 201, body: {} }])
    try {
      const unkeyed = createClient({ baseUrl: scripted.url, apiKey: 'k', sleep })
      const refused = await rejectsWith(unkeyed.createPet({ name: 'Once', categoryId: 1 }, { idempotencyKey: false }), PetstoreError)
      assert.equal(refused.status, 503)
      assert.equal(scripted.seen.length, 1)
    } finally {
      await scripted.close()
    }
    // A 503 service_unavailable says nothing was done: sent again, key or not.
    const nothingDone = await scriptedServer([{ status: 503, headers: { 'retry-after': '1' }, body: errorBody(503, 'service_unavailable') }, { status: 201, body: { id: 1 } }])
    try {
      const unkeyed = createClient({ baseUrl: nothingDone.url, apiKey: 'k', sleep })
      await unkeyed.createPet({ name: 'Once', categoryId: 1 }, { idempotencyKey: false })
      assert.equal(nothingDone.seen.length, 2)
    } finally {
      await nothingDone.close()
    }
  })

  it('waits out 409 idempotency_key_in_use and retries with the same key', async () => {
    const pet = { id: 9, name: 'Rex', categoryId: 1, status: 'available' }
    const scripted = await scriptedServer([
      { status: 409, headers: { 'retry-after': '1' }, body: errorBody(409, 'idempotency_key_in_use') },
      { status: 201, headers: { 'idempotent-replayed': 'true' }, body: pet },
    ])
    try {
      const { sleep, waits } = recordingSleep()
      const created = await createClient({ baseUrl: scripted.url, apiKey: 'k', sleep }).createPet({ name: 'Rex', categoryId: 1 }, { idempotencyKey: 'k-1' })
      assert.deepEqual(created, pet)
      assert.deepEqual(waits, [1000])
      assert.deepEqual(
        scripted.seen.map((request) => request.headers['idempotency-key']),
        ['k-1', 'k-1'],
      )
    } finally {
      await scripted.close()
    }
  })

  it('creates exactly one pet when the answer to createPet is lost: the retry gets the replay', async () => {
    const traced = flakyFetch((call) => (call === 1 ? 'after-response' : false))
    const { sleep } = recordingSleep()
    const name = `Lost answer ${randomUUID()}`
    const pet = await createClient({ ...options, fetch: traced.fetch, sleep }).createPet({ name, categoryId: 5 })
    assert.equal(traced.seen.length, 2)
    assert.equal(traced.replies[0]!.status, 201)
    assert.equal(traced.replies[1]!.status, 201)
    assert.equal(traced.replies[1]!.headers.get('idempotent-replayed'), 'true')
    const named: Pet[] = []
    for await (const each of createClient(options).allPets({ limit: 100 })) if (each.name === name) named.push(each)
    assert.deepEqual(named, [pet])
  })

  it('returns the first pet again for a repeated Idempotency-Key, and throws 422 for another body under it', async () => {
    const client = createClient(options)
    const idempotencyKey = `repeat-${randomUUID()}`
    const first = await client.createPet({ name: 'Twice', categoryId: 1 }, { idempotencyKey })
    assert.deepEqual(await client.createPet({ name: 'Twice', categoryId: 1 }, { idempotencyKey }), first)
    const error = await rejectsWith(client.createPet({ name: 'Other', categoryId: 1 }, { idempotencyKey }), PetstoreError)
    assert.equal(error.status, 422)
    assert.equal(error.code, 'idempotency_key_reused')
    assert.equal(error.attempts, 1)
  })

  it('stops after maxAttempts and throws the last error', async () => {
    const traced = flakyFetch(() => 'before')
    const { sleep, waits } = recordingSleep()
    const error = await rejectsWith(createClient({ ...options, fetch: traced.fetch, sleep, maxAttempts: 3 }).listPets(), PetstoreNetworkError)
    assert.equal(error.attempts, 3)
    assert.equal(traced.seen.length, 3)
    assert.equal(waits.length, 2)

    // The default is 4 attempts; the error is the last answer's.
    const scripted = await scriptedServer([{ status: 503, body: errorBody(503, 'service_unavailable', 'still down') }])
    try {
      const down = await rejectsWith(createClient({ baseUrl: scripted.url, apiKey: 'k', sleep }).listPets(), PetstoreError)
      assert.equal(down.status, 503)
      assert.equal(down.message, 'still down')
      assert.equal(down.attempts, 4)
      assert.equal(scripted.seen.length, 4)
    } finally {
      await scripted.close()
    }
  })

  it('reports an answer that is not the Error body as invalid_response', async () => {
    const scripted = await scriptedServer([{ status: 404, raw: '<html>Not Found</html>' }])
    try {
      const error = await rejectsWith(createClient({ baseUrl: scripted.url, apiKey: 'k' }).listPets(), PetstoreError)
      assert.equal(error.status, 404)
      assert.equal(error.code, 'invalid_response')
    } finally {
      await scripted.close()
    }
  })
})

describe('petstore/client as an installed package', () => {
  let server: TestServer
  let key: string
  let project: ConsumerProject
  before(async () => {
    project = createConsumerProject()
    server = await startTestServer()
    key = await server.createKey('free')
  })
  after(async () => {
    await server.close()
    project.remove()
  })

  it("resolves `import { createClient } from 'petstore/client'` and calls the API", async () => {
    writeFileSync(
      join(project.dir, 'main.js'),
      `import { createClient, PetstoreError } from 'petstore/client'
const client = createClient({ baseUrl: process.env.URL, apiKey: process.env.KEY })
const pet = await client.createPet({ name: 'Installed', categoryId: 2 })
const page = await client.listPets()
console.log(JSON.stringify({ pet, count: page.pets.length, error: typeof PetstoreError }))
`,
    )
    const { stdout } = await run(process.execPath, ['main.js'], { cwd: project.dir, env: { ...process.env, URL: server.url, KEY: key } })
    const result = JSON.parse(stdout) as { pet: Pet; count: number; error: string }
    assert.equal(result.pet.name, 'Installed')
    assert.equal(result.count, 1)
    assert.equal(result.error, 'function')
  })

  it("type-checks a TypeScript project that imports the client's types", async () => {
    await project.typeCheck(
      `import { createClient, PetstoreError, type NewPet, type Pet, type PetStatus, type PetPage } from 'petstore/client'
const client = createClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'ps_test_x', maxAttempts: 2 })
const status: PetStatus = 'sold'
const page: Promise<PetPage> = client.listPets({ status, limit: 5 })
const created: Promise<Pet> = client.createPet({ name: 'Rex', categoryId: 1 }, { idempotencyKey: 'k' })
const id: Promise<number> = created.then((pet) => pet.id)
// @ts-expect-error a NewPet needs categoryId
const incomplete: NewPet = { name: 'Rex' }
// @ts-expect-error "lost" is not a PetStatus
const wrong: PetStatus = 'lost'
// @ts-expect-error pet ids are numbers
const name: Promise<string> = created.then((pet) => pet.id)
function describe(error: unknown): string {
  return error instanceof PetstoreError ? \`\${error.status} \${error.code} \${error.rateLimit?.remaining ?? '-'}\` : ''
}
export { page, id, incomplete, wrong, name, describe }
`)
  })

  it('the built client imports nothing but its own modules (no typebox, no server code)', () => {
    const dir = join(ROOT, 'dist/client')
    for (const file of readdirSync(dir).filter((name) => name.endsWith('.js'))) {
      const source = readFileSync(join(dir, file), 'utf8')
      const specifiers = [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g)].map((match) => match[1])
      for (const specifier of specifiers) assert.match(specifier!, /^\.\/[a-z-]+\.js$/, `${file} imports ${specifier}`)
    }
  })
})
