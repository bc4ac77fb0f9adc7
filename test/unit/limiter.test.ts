// The limiter's own rules (which window a response reports, when a refused caller
// may retry) and the headers the /v1 guard makes of them. How stores count is the
// contract suite's (test/counter-stores.test.ts).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createManualClock } from '../../src/clock.js'
import { rateLimitHeaders } from '../../src/plugins/v1-guard.js'
import { createRateLimiter } from '../../src/rate-limit/limiter.js'
import { createMemoryCounterStore } from '../../src/rate-limit/memory-store.js'
import type { Limits } from '../../src/vocabulary/plans.js'

const FREE = { perMinute: 60, perDay: 1000 }

function setup(start = '2026-11-22T10:00:00.000Z', options = { banAfter: 20, banSeconds: 900 }) {
  const clock = createManualClock(start)
  const limiter = createRateLimiter({ store: createMemoryCounterStore(clock), ...options })
  // What the /v1 guard answers: the limiter's count and the headers made of it.
  const hit = async (limits: Limits = FREE, identity = 'key:1') => {
    const counted = await limiter.check({ counterIdentity: identity, banIdentity: identity }, limits)
    assert.notEqual(counted.outcome, 'unavailable')
    if (counted.outcome === 'unavailable') throw new Error('memory counters are always available')
    const headers = rateLimitHeaders(counted)
    const retryAfter = headers['retry-after'] === undefined ? undefined : Number(headers['retry-after'])
    return { ...counted, headers, retryAfter, refusedBy: counted.outcome === 'limited' ? counted.reported.name : undefined }
  }
  const hits = async (n: number, limits = FREE, identity = 'key:1') => {
    for (let i = 0; i < n; i++) await hit(limits, identity)
  }
  return { clock, limiter, hit, hits }
}

describe('rate limiter and its headers', () => {
  it('serves the limit and refuses the next request in the same UTC minute', async () => {
    const { hit, hits } = setup('2026-11-22T10:00:30.000Z')
    await hits(59)
    const last = await hit()
    assert.equal(last.outcome, 'served')
    assert.equal(last.headers['x-ratelimit-remaining'], '0')
    const over = await hit()
    assert.equal(over.outcome, 'limited')
    assert.equal(over.refusedBy, 'minute')
    assert.equal(over.retryAfter, 30)
    assert.equal(over.headers['retry-after'], '30')
    assert.equal(over.headers['x-ratelimit-reset'], String(Date.parse('2026-11-22T10:01:00Z') / 1000))
  })

  it('resets exactly at the minute boundary: :59.999 is the old window, :00.000 the new', async () => {
    const { clock, hit, hits } = setup('2026-11-22T10:00:00.000Z')
    await hits(60)
    clock.set('2026-11-22T10:00:59.999Z')
    const edge = await hit()
    assert.equal(edge.outcome, 'limited')
    assert.equal(edge.retryAfter, 1, 'a part of a second rounds up')
    clock.set('2026-11-22T10:01:00.000Z')
    const fresh = await hit()
    assert.equal(fresh.outcome, 'served')
    assert.equal(fresh.headers['x-ratelimit-remaining'], '59')
  })

  it('runs the daily quota to UTC midnight, and resets there', async () => {
    const { clock, hit } = setup('2026-11-22T23:00:00.000Z')
    const limits = { perMinute: 100, perDay: 150 }
    for (let i = 0; i < 150; i++) {
      if (i % 100 === 0) clock.advance(60_000)
      assert.equal((await hit(limits)).outcome, 'served')
    }
    clock.set('2026-11-22T23:59:59.000Z')
    const over = await hit(limits)
    assert.equal(over.outcome, 'limited')
    assert.equal(over.refusedBy, 'day')
    assert.equal(over.retryAfter, 1)
    assert.equal(over.headers['x-ratelimit-limit'], '150')
    assert.equal(over.headers['x-ratelimit-reset'], String(Date.parse('2026-11-23T00:00:00Z') / 1000))
    clock.set('2026-11-23T00:00:00.000Z')
    assert.equal((await hit(limits)).outcome, 'served')
  })

  it('reports the window with the fewest requests left, the minute on a tie', async () => {
    const { hit, clock } = setup('2026-11-22T10:00:00.000Z')
    const limits = { perMinute: 10, perDay: 12 }
    const first = await hit(limits) // minute 9 left, day 11 left
    assert.deepEqual([first.headers['x-ratelimit-limit'], first.headers['x-ratelimit-remaining']], ['10', '9'])
    for (let i = 0; i < 4; i++) await hit(limits) // minute 5 left, day 7 left
    clock.advance(60_000)
    const daily = await hit(limits) // minute 9 left, day 6 left → the day
    assert.deepEqual([daily.headers['x-ratelimit-limit'], daily.headers['x-ratelimit-remaining']], ['12', '6'])
    const equal = setup()
    const same = await equal.hit({ perMinute: 5, perDay: 5 })
    assert.equal(same.headers['x-ratelimit-reset'], String(Date.parse('2026-11-22T10:01:00Z') / 1000), 'tie: the minute')
  })

  it('describes both windows in RateLimit-Policy and RateLimit, rounding parts of a second up', async () => {
    const { hit } = setup('2026-11-22T10:00:15.400Z')
    const d = await hit()
    assert.equal(d.headers['ratelimit-policy'], '"minute";q=60;w=60, "day";q=1000;w=86400')
    assert.equal(d.headers.ratelimit, '"minute";r=59;t=45, "day";r=999;t=50385')
  })

  it('gives each set of limits its own RateLimit-Policy, the same on every call', async () => {
    const { hit } = setup('2026-11-22T10:00:15.000Z')
    const pro = { perMinute: 300, perDay: 10_000 }
    const custom = { perMinute: 7, perDay: 70 }
    for (let i = 0; i < 2; i++) {
      assert.equal((await hit(pro)).headers['ratelimit-policy'], '"minute";q=300;w=60, "day";q=10000;w=86400')
      assert.equal((await hit(custom)).headers['ratelimit-policy'], '"minute";q=7;w=60, "day";q=70;w=86400')
    }
  })

  it('bans after more than banAfter refusals in one minute, for banSeconds, then lifts the ban', async () => {
    const { clock, hit, hits } = setup('2026-11-22T10:00:00.000Z', { banAfter: 3, banSeconds: 600 })
    const limits = { perMinute: 2, perDay: 100 }
    await hits(2, limits)
    for (let i = 0; i < 3; i++) assert.equal((await hit(limits)).outcome, 'limited')
    const banned = await hit(limits)
    assert.equal(banned.outcome, 'banned')
    assert.equal(banned.retryAfter, 600)
    clock.advance(120_000) // new minute windows do not lift a ban
    const still = await hit(limits)
    assert.equal(still.outcome, 'banned')
    assert.equal(still.retryAfter, 480)
    assert.equal(still.headers['retry-after'], '480')
    clock.set('2026-11-22T10:10:00.000Z')
    assert.equal((await hit(limits)).outcome, 'served')
  })
})

describe('the in-memory counters, under requests from many addresses', () => {
  it('keep a bounded number of addresses: past it, the oldest whose minute has passed are forgotten, daily count and all; never an account, a minute or a ban', async () => {
    const clock = createManualClock(Date.UTC(2026, 10, 29, 1, 0, 0))
    const store = createMemoryCounterStore(clock, { maxAddresses: 20_000 })
    const limits = { perMinute: 60, perDay: 1_000 }
    const hit = (identity: string) => store.hitNow({ identity, banIdentity: identity, limits, banAfter: 5, banMs: 600_000 })
    hit('account:1@0')
    hit('ip:10.0.0.1')
    // A minute later, 50,000 more addresses, one request each, a minute at a time.
    for (let i = 0; i < 50_000; i++) {
      if (i % 10_000 === 0) clock.advance(60_000)
      hit(`ip:10.1.${i >> 8}.${i & 255}`)
    }
    assert.equal(store.peekNow('ip:10.0.0.1', 'ip:10.0.0.1').dayCount, 0, 'the oldest address is forgotten')
    assert.equal(store.peekNow('account:1@0', 'account:1@0').dayCount, 1, 'an account is never forgotten')
    assert.equal(store.peekNow('ip:10.1.195.79', 'ip:10.1.195.79').dayCount, 1, "the minute under way's addresses are kept")
    let kept = 0
    for (let i = 0; i < 50_000; i++) if (store.peekNow(`ip:10.1.${i >> 8}.${i & 255}`, '').dayCount > 0) kept++
    assert.ok(kept <= 20_000 + 10_000, `${kept} of 50,000 addresses kept (the cap, and the minute under way)`)
  })
})
