// The store's circuit breaker and the guard at the store's edge, without a database:
// what opens it, that a refusal is a rejection (never a throw, which would escape a
// caller's .catch and end the process), one probe at a time, and the way back.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createCircuitBreaker } from '../../src/db/circuit-breaker.js'
import { guarded, StoreUnavailableError } from '../../src/db/store-errors.js'
import { createAuthenticator } from '../../src/api-keys/authenticator.js'
import { generateApiKey } from '../../src/api-keys/key-format.js'
import { systemClock } from '../../src/clock.js'
import type { StoredApiKey } from '../../src/db/api-keys-store.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const silence = () => Object.assign(new Error('Query read timeout'))
const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })

describe('circuit breaker at the store edge', () => {
  it('opens on a query given up for silence, not on a reset, and refuses with a rejection until a probe answers', async () => {
    let answer: () => Promise<void> = () => Promise.reject(new Error('still silent'))
    let probes = 0
    const changes: boolean[] = []
    const breaker = createCircuitBreaker({ probe: () => (probes++, answer()), probeEveryMs: 20, onChange: (open) => changes.push(open) })
    let fail = reset
    const store = guarded({ read: async () => Promise.reject(fail()) }, { breaker })
    try {
      await assert.rejects(store.read(), StoreUnavailableError)
      assert.equal(breaker.open, false, 'a reset costs only the call it caught')
      fail = silence
      await assert.rejects(store.read(), StoreUnavailableError)
      assert.equal(breaker.open, true)

      let result: Promise<unknown> | undefined
      assert.doesNotThrow(() => (result = store.read()), 'refused by a rejected promise, never thrown')
      const refusal = await result!.catch((error: unknown) => error)
      assert.ok(refusal instanceof StoreUnavailableError)
      assert.equal(refusal.outcome, 'not_written')

      await sleep(100)
      assert.ok(probes >= 2, `probes every 20 ms while open (${probes})`)
      answer = () => Promise.resolve()
      await sleep(60)
      assert.equal(breaker.open, false, 'closed by the first probe answered, with no call needed')
      assert.deepEqual(changes, [true, false], 'each change reported once')
    } finally {
      breaker.close()
    }
  })

  it('has one probe in flight at a time, however long it waits', async () => {
    let inFlight = 0
    let most = 0
    const breaker = createCircuitBreaker({
      probe: async () => {
        most = Math.max(most, ++inFlight)
        await sleep(80)
        inFlight--
        throw new Error('silent')
      },
      probeEveryMs: 10,
    })
    try {
      breaker.trip(silence())
      await sleep(200)
      assert.equal(most, 1)
    } finally {
      breaker.close()
    }
  })

  it('lets no request wait on a key lookup begun before the circuit opened: the next is refused at once', async () => {
    const breaker = createCircuitBreaker({ probe: () => Promise.reject(new Error('still silent')), probeEveryMs: 1_000 })
    let lookups = 0
    // The database went silent: a lookup sent now is never answered.
    const apiKeys = guarded({ findByHash: () => (lookups++, new Promise<undefined>(() => {})), touch: async () => {} }, { breaker })
    const authenticator = createAuthenticator({ apiKeys, clock: systemClock, environment: 'test', storeRefusing: () => breaker.open })
    const header = `Bearer ${generateApiKey('test')}`
    try {
      let settled = false
      void authenticator.authenticate(header).finally(() => (settled = true))
      await sleep(10)
      assert.equal(settled, false, 'the first lookup waits on the silent database')
      const joined = authenticator.authenticate(header)
      breaker.trip(silence()) // another call gave up on its query: the circuit opens
      // A request that came while the circuit was closed waits with the lookup under way
      // (one lookup per key, not one per request); one that comes once it is open does not.
      const next = await Promise.race([authenticator.authenticate(header).then(() => 'let through', (error: unknown) => error), sleep(200).then(() => 'still waiting after 200 ms')])
      assert.ok(next instanceof StoreUnavailableError && next.outcome === 'not_written', String(next))
      assert.equal(lookups, 1, 'the refusal cost no lookup')
      assert.equal(await Promise.race([joined.then(() => 'settled', () => 'settled'), sleep(20).then(() => 'waiting')]), 'waiting')
    } finally {
      breaker.close()
    }
  })
  it('keeps what a later key lookup read over what one begun before the circuit opened read, answered late', async () => {
    let refusing = false
    const answers: Array<(stored: StoredApiKey) => void> = []
    const apiKeys = { findByHash: () => new Promise<StoredApiKey>((resolve) => answers.push(resolve)), touch: async () => {} }
    const authenticator = createAuthenticator({ apiKeys, clock: systemClock, environment: 'test', storeRefusing: () => refusing })
    const header = `Bearer ${generateApiKey('test')}`
    const now = Date.now()
    const row = (revokedAt: number | null): StoredApiKey => ({
      id: 7,
      account: { id: 1, name: 'Shelter', plan: 'free', custom: null, createdAt: now, disabledAt: null },
      name: 'k',
      prefix: 'ps_test_AbCd',
      scopes: 'pets:read',
      createdAt: now,
      lastUsedAt: null,
      revokedAt,
      expiresAt: null,
      disabledAt: null,
      disabledByOperator: false,
      replacedBy: null,
      createdBy: null,
    })
    const early = authenticator.authenticate(header) // its query waits on a silent database
    refusing = true // the circuit opened: the next request does not join that lookup
    const later = authenticator.authenticate(header)
    refusing = false
    assert.equal(answers.length, 2)
    answers[1]!(row(now)) // the later lookup reads the key revoked
    assert.equal((await later).ok, false)
    answers[0]!(row(null)) // the early one is answered at last, with the key as it was before
    assert.equal((await early).ok, true, 'a request is answered what its own lookup read')
    const next = await authenticator.authenticate(header)
    assert.equal(next.ok, false, 'the late answer did not replace the fresher record in the cache')
    assert.equal(answers.length, 2, 'and the next request was answered from the cache')
  })
})
