// POST /v1/pets with an Idempotency-Key (IETF draft httpapi-idempotency-key-header):
// a retry replays the first answer and creates nothing, on every store.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createManualClock } from '../src/clock.js'
import { StoreUnavailableError } from '../src/db/store-errors.js'
import type { ErrorBody } from '../src/errors.js'
import { fingerprint, IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_TTL_MS } from '../src/idempotency/idempotency-key.js'
import type { Pet } from '../src/schemas/pet.js'
import { parseRawAnswer, rawHttp } from './helpers/raw-http.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'
import { insertPet } from './helpers/pets.js'

for (const store of STORES) describe(`Idempotency-Key on POST /v1/pets (${store})`, () => {
  const clock = createManualClock('2026-11-23T10:00:00Z')
  let server: TestServer
  let key: string
  before(async () => {
    server = await startTestServer({ store, clock })
    key = await server.createKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 })
  })
  after(() => server.close())

  /** A 201's Pet or an Error body. */
  type Answer = Partial<Pet> & Partial<Omit<ErrorBody, 'status'>>
  const create = (idempotencyKey: string | undefined, json: unknown, apiKey = key) =>
    server.request<Answer>('/v1/pets', {
      method: 'POST',
      key: apiKey,
      json,
      headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
    })
  /** Pets named `name`, read back through the API. */
  const named = async (name: string) => {
    const all: Pet[] = []
    let path: string | undefined = '/v1/pets?limit=100'
    while (path) {
      const res: { body: Pet[]; headers: Headers } = await server.request<Pet[]>(path, { key })
      all.push(...res.body)
      path = /^<([^>]+)>/.exec(res.headers.get('link') ?? '')?.[1]
    }
    return all.filter((p) => p.name === name)
  }

  it('replays the first 201, body and Location, with Idempotent-Replayed, and creates nothing more', async () => {
    const idem = randomUUID()
    const first = await create(idem, { name: 'Once', categoryId: 4, status: 'pending' })
    assert.equal(first.status, 201)
    assert.equal(first.headers.get('idempotent-replayed'), null)
    const again = await create(idem, { status: 'pending', categoryId: 4, name: 'Once' }) // same fields, other order
    assert.equal(again.status, 201)
    assert.deepEqual(again.body, first.body)
    assert.equal(again.headers.get('location'), first.headers.get('location'))
    assert.equal(again.headers.get('idempotent-replayed'), 'true')
    assert.deepEqual(await named('Once'), [first.body])
  })

  it('takes the key as a quoted structured-field string too', async () => {
    const idem = randomUUID()
    const first = await create(`"${idem}"`, { name: 'Quoted', categoryId: 1 })
    const again = await create(idem, { name: 'Quoted', categoryId: 1 })
    assert.equal(first.status, 201)
    assert.deepEqual(again.body, first.body)
    assert.equal((await named('Quoted')).length, 1)
  })

  it('treats a left-out status and an explicit "available" as the same body', async () => {
    const idem = randomUUID()
    const first = await create(idem, { name: 'Default', categoryId: 1 })
    const again = await create(idem, { name: 'Default', categoryId: 1, status: 'available' })
    assert.equal(again.status, 201)
    assert.equal(again.headers.get('idempotent-replayed'), 'true')
    assert.deepEqual(again.body, first.body)
  })

  it('answers 422 idempotency_key_reused for the same key with another body, and creates nothing', async () => {
    const idem = randomUUID()
    assert.equal((await create(idem, { name: 'First body', categoryId: 1 })).status, 201)
    const res = await create(idem, { name: 'Second body', categoryId: 1 })
    assert.equal(res.status, 422)
    assert.equal(res.body.code, 'idempotency_key_reused')
    assert.match(res.body.message ?? '', /Idempotency-Key was already used with a different request \(another body or operation\)/)
    assert.deepEqual(await named('Second body'), [])
  })

  it('scopes keys to the API key: another caller with the same Idempotency-Key gets its own pet', async () => {
    const idem = randomUUID()
    const other = await server.createKey('enterprise', { perMinute: 1_000, perDay: 10_000 })
    const mine = await create(idem, { name: 'Scoped', categoryId: 1 })
    const theirs = await create(idem, { name: 'Scoped', categoryId: 1 }, other)
    assert.equal(theirs.status, 201)
    assert.notEqual(theirs.body.id, mine.body.id)
  })

  it('answers 409 idempotency_key_in_use with Retry-After while the first request is still running', async () => {
    const idem = randomUUID()
    // A request that holds the key and has not finished: its claim, as the handler makes it.
    const claim = await server.store.idempotency.claim(
      { accountId: await server.accountId(key), key: idem },
      { fingerprint: fingerprint({ name: 'Waiting', categoryId: 1 }), now: clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS },
    )
    assert.equal(claim.outcome, 'claimed')
    const res = await create(idem, { name: 'Waiting', categoryId: 1 })
    assert.equal(res.status, 409)
    assert.equal(res.body.code, 'idempotency_key_in_use')
    assert.equal(res.headers.get('retry-after'), '1')
  })

  it('lets a retry take over a claim whose request never finished, once its lease has run out', async () => {
    const idem = randomUUID()
    // The claim of a request whose process died mid-request, as the handler makes it.
    await server.store.idempotency.claim(
      { accountId: await server.accountId(key), key: idem },
      { fingerprint: fingerprint({ name: 'Orphan', categoryId: 1 }), now: clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS },
    )
    clock.advance(IDEMPOTENCY_LEASE_MS)
    const res = await create(idem, { name: 'Orphan', categoryId: 1 })
    assert.equal(res.status, 201)
    assert.equal((await create(idem, { name: 'Orphan', categoryId: 1 })).headers.get('idempotent-replayed'), 'true')
  })

  it('frees a key whose claim was taken but its answer lost (a cut connection): the retry runs at once, not after the lease', async () => {
    const idem = randomUUID()
    const { claim } = server.store.idempotency
    // The database took the claim, and the connection was cut before its answer came.
    server.store.idempotency.claim = async (...args) => {
      await claim(...args)
      throw new StoreUnavailableError('the database is unavailable: read ECONNRESET', { outcome: 'unknown' })
    }
    let first
    try {
      first = await create(idem, { name: 'Cut', categoryId: 1 })
    } finally {
      server.store.idempotency.claim = claim
    }
    assert.equal(first.status, 503)
    assert.equal(first.body.code, 'outcome_unknown')
    // The client's retry, with the same key, a moment later (the release is not awaited by the 503).
    let retry = await create(idem, { name: 'Cut', categoryId: 1 })
    for (let i = 0; i < 20 && retry.status === 409; i++) retry = await new Promise((resolve) => setTimeout(resolve, 25)).then(() => create(idem, { name: 'Cut', categoryId: 1 }))
    assert.equal(retry.status, 201, `${retry.status} ${JSON.stringify(retry.body)}`)
    assert.equal((await named('Cut')).length, 1)
  })

  it('answers 422 idempotency_key_reused to a retry with another body, even once an abandoned claim\'s lease has run out', async () => {
    const idem = randomUUID()
    await server.store.idempotency.claim(
      { accountId: await server.accountId(key), key: idem },
      { fingerprint: fingerprint({ name: 'Died mid-request', categoryId: 1 }), now: clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS },
    )
    clock.advance(IDEMPOTENCY_LEASE_MS)
    const res = await create(idem, { name: 'Another body', categoryId: 1 })
    assert.equal(res.status, 422, res.text)
    assert.equal(res.body.code, 'idempotency_key_reused')
    assert.deepEqual(await named('Another body'), [], 'nothing was created')
    // The key still belongs to its first body: that body's retry takes the claim over.
    assert.equal((await create(idem, { name: 'Died mid-request', categoryId: 1 })).status, 201)
  })

  it('lets a slow first request neither complete nor free a claim that a retry took over', async () => {
    const scope = { accountId: await server.accountId(key), key: randomUUID() }
    const pet = { name: 'Slowpoke', categoryId: 1 }
    const options = () => ({ fingerprint: fingerprint(pet), now: clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS })
    const slow = await server.store.idempotency.claim(scope, options())
    assert.equal(slow.outcome, 'claimed')
    clock.advance(IDEMPOTENCY_LEASE_MS)
    const retry = await server.store.idempotency.claim(scope, options())
    assert.equal(retry.outcome, 'claimed')
    if (slow.outcome !== 'claimed' || retry.outcome !== 'claimed') return
    await server.store.idempotency.release(slow.claim) // must not free the retry's claim
    // The write as the handler runs it: the pet inserted in the transaction that stores the 201.
    const insertOnce = (claim: typeof slow.claim) => insertPet(server.store.pets, pet, clock.now(), { claim, status: 201 })
    await assert.rejects(insertOnce(slow.claim), { name: 'ClaimLostError' })
    const created = await insertOnce(retry.claim)
    assert.deepEqual(await named('Slowpoke'), [created], 'one pet: the slow request\'s insert was rolled back')
    const replay = await server.store.idempotency.claim(scope, options())
    assert.deepEqual(replay, { outcome: 'replay', response: { status: 201, body: created } })
  })

  it('forgets a key after 24 hours: the same key then creates again, and the purge deletes the record', async () => {
    const idem = randomUUID()
    const first = await create(idem, { name: 'Yesterday', categoryId: 1 })
    clock.advance(IDEMPOTENCY_TTL_MS - 1)
    assert.equal((await create(idem, { name: 'Yesterday', categoryId: 1 })).headers.get('idempotent-replayed'), 'true')
    clock.advance(1)
    const later = await create(idem, { name: 'Yesterday', categoryId: 1 })
    assert.equal(later.status, 201)
    assert.equal(later.headers.get('idempotent-replayed'), null)
    assert.notEqual(later.body.id, first.body.id)
    clock.advance(IDEMPOTENCY_TTL_MS)
    assert.ok((await server.store.idempotency.purgeExpired(clock.now())) >= 1)
    const fresh = await server.store.idempotency.claim(
      { accountId: await server.accountId(key), key: idem },
      { fingerprint: 'new', now: clock.now(), ttlMs: IDEMPOTENCY_TTL_MS, leaseMs: IDEMPOTENCY_LEASE_MS },
    )
    assert.equal(fresh.outcome, 'claimed')
  })

  it('creates exactly one pet for 20 concurrent requests with one key: each answer is that 201 or a 409', async () => {
    const idem = randomUUID()
    const answers = await Promise.all(Array.from({ length: 20 }, () => create(idem, { name: 'Stampede', categoryId: 2 })))
    const pets = await named('Stampede')
    assert.equal(pets.length, 1)
    for (const res of answers) {
      if (res.status === 201) assert.deepEqual(res.body, pets[0])
      else {
        assert.equal(res.status, 409, res.text)
        assert.equal(res.body.code, 'idempotency_key_in_use')
      }
    }
    assert.ok(answers.some((res) => res.status === 201))
  })

  it('does not spend a key on a request refused before it ran: a 400 leaves the key free', async () => {
    const idem = randomUUID()
    const bad = await create(idem, { name: 'Typo', categoryID: 1 })
    assert.equal(bad.status, 400)
    const good = await create(idem, { name: 'Typo', categoryId: 1 })
    assert.equal(good.status, 201)
    assert.equal(good.headers.get('idempotent-replayed'), null)
  })

  it('answers 400 invalid_parameter for an Idempotency-Key header sent twice, each valid alone, and creates nothing', async () => {
    const body = JSON.stringify({ name: 'Twice', categoryId: 1 })
    const answer = await rawHttp(
      server.url,
      `POST /v1/pets HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Idempotency-Key: ${randomUUID()}\r\nIdempotency-Key: ${randomUUID()}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      { halfClose: false },
    )
    const { status, body: error } = parseRawAnswer(answer)
    assert.equal(status, 400, answer)
    assert.equal((error as ErrorBody).code, 'invalid_parameter')
    const listed = await server.request<Pet[]>('/v1/pets?limit=100', { key })
    assert.ok(!listed.body.some((pet) => pet.name === 'Twice'))
  })

  for (const [what, value] of [
    ['an empty key', '""'],
    ['a key of 256 characters', 'k'.repeat(256)],
    ['a key with non-ASCII characters', 'clé-1'],
    ['a key with a stray quote', 'ab"c'],
    ['two keys (a repeated header arrives joined with a comma)', 'first, second'],
  ] as const) {
    it(`answers 400 invalid_parameter for ${what}`, async () => {
      const res = await server.request<ErrorBody>('/v1/pets', {
        method: 'POST',
        key,
        json: { name: 'Never', categoryId: 1 },
        // fetch refuses to send non-Latin-1 header values; send the UTF-8 bytes as Latin-1.
        headers: { 'idempotency-key': Buffer.from(value).toString('latin1') },
      })
      assert.equal(res.status, 400)
      assert.equal(res.body.code, 'invalid_parameter')
      assert.deepEqual(res.body.details, [{ field: 'Idempotency-Key', message: 'not a valid idempotency key' }])
    })
  }
})
