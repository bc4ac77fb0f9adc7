// One contract, two implementations: the in-memory counters and the Redis Lua script
// must count, refuse and ban alike. Every scenario runs on both (as Kysely runs its
// tests over every dialect), on a clock the test moves: the memory store reads it,
// and the Redis store is handed it in place of Redis's TIME. Requests of one
// event-loop turn (one script call in Redis) must get what they would one by one.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createManualClock } from '../src/clock.js'
import type { CounterStore, HitResult } from '../src/rate-limit/counter-store.js'
import { createMemoryCounterStore } from '../src/rate-limit/memory-store.js'
import { createRedisCounterStore } from '../src/rate-limit/redis-store.js'
import { needs, REDIS_URL, uniqueRedisPrefix } from './helpers/services.js'

type Clock = ReturnType<typeof createManualClock>
const STORES: { name: string; open(clock: Clock): Promise<CounterStore & { cleanUp?(): Promise<void> }> }[] = [
  { name: 'memory', open: async (clock) => createMemoryCounterStore(clock) },
]
if (await needs('redis', 'the Redis counter store contract')) {
  STORES.push({
    name: 'redis',
    async open(clock) {
      const prefix = uniqueRedisPrefix()
      const store = createRedisCounterStore({ url: REDIS_URL, prefix, clock })
      await store.ready()
      return Object.assign(store, {
        async cleanUp() {
          const keys = await store.redis.keys(`${prefix}:*`)
          if (keys.length > 0) await store.redis.del(...keys)
        },
      })
    },
  })
}

for (const { name, open } of STORES) describe(`counter store contract (${name})`, () => {
  const clock = createManualClock('2026-11-22T10:00:00.000Z')
  let store: Awaited<ReturnType<typeof open>>
  let n = 0
  before(async () => {
    store = await open(clock)
  })
  after(async () => {
    await store.cleanUp?.()
    await store.close()
  })

  /** A counter of its own for each test: identities never meet across tests. */
  function counter(perMinute: number, perDay: number, ban = { banAfter: 20, banMs: 900_000 }) {
    const identity = `key:${++n}`
    return (id = identity) => store.hit({ identity: id, banIdentity: id, limits: { perMinute, perDay }, ...ban })
  }
  const outcomes = async (hit: () => Promise<HitResult>, times: number) => {
    const seen: string[] = []
    for (let i = 0; i < times; i++) seen.push((await hit()).outcome)
    return seen
  }

  it('serves up to the per-minute limit, counting in both windows, and refuses the next in the same UTC minute', async () => {
    clock.set('2026-11-22T10:00:30.000Z')
    const hit = counter(3, 100)
    for (let i = 1; i <= 3; i++) assert.deepEqual(await hit(), { outcome: 'served', now: clock.now(), minuteCount: i, dayCount: i, bannedUntil: 0 })
    assert.deepEqual(await hit(), { outcome: 'limited', now: clock.now(), minuteCount: 3, dayCount: 3, bannedUntil: 0 })
  })

  it('starts a new minute exactly at the boundary: :59.999 is the old window, :00.000 the new', async () => {
    clock.set('2026-11-22T10:00:00.000Z')
    const hit = counter(2, 100)
    await outcomes(hit, 2)
    clock.set('2026-11-22T10:00:59.999Z')
    assert.equal((await hit()).outcome, 'limited')
    clock.set('2026-11-22T10:01:00.000Z')
    const fresh = await hit()
    assert.deepEqual([fresh.outcome, fresh.minuteCount, fresh.dayCount], ['served', 1, 3])
  })

  it('counts a refused request in neither window', async () => {
    clock.set('2026-11-22T11:00:00.000Z')
    const hit = counter(2, 100)
    assert.deepEqual(await outcomes(hit, 5), ['served', 'served', 'limited', 'limited', 'limited'])
    clock.set('2026-11-22T11:01:00.000Z')
    assert.equal((await hit()).dayCount, 3)
  })

  it('runs the daily quota to UTC midnight and starts afresh there', async () => {
    clock.set('2026-11-22T23:58:00.000Z')
    const hit = counter(5, 7)
    assert.deepEqual(await outcomes(hit, 5), Array(5).fill('served'))
    clock.set('2026-11-22T23:59:00.000Z')
    const last = await outcomes(hit, 3)
    assert.deepEqual(last, ['served', 'served', 'limited'])
    clock.set('2026-11-22T23:59:59.999Z')
    assert.equal((await hit()).outcome, 'limited')
    clock.set('2026-11-23T00:00:00.000Z')
    const fresh = await hit()
    assert.deepEqual([fresh.outcome, fresh.minuteCount, fresh.dayCount], ['served', 1, 1])
  })

  it('bans after more than banAfter refusals in one minute, keeps the ban across minutes, and lifts it when it ends', async () => {
    clock.set('2026-11-22T12:00:00.000Z')
    const hit = counter(1, 100, { banAfter: 2, banMs: 600_000 })
    assert.deepEqual(await outcomes(hit, 3), ['served', 'limited', 'limited'])
    const banned = await hit()
    assert.deepEqual([banned.outcome, banned.bannedUntil], ['banned', clock.now() + 600_000])
    clock.advance(120_000)
    const still = await hit()
    assert.deepEqual([still.outcome, still.bannedUntil], ['banned', banned.bannedUntil])
    clock.set(banned.bannedUntil - 1)
    assert.equal((await hit()).outcome, 'banned')
    clock.set(banned.bannedUntil)
    assert.equal((await hit()).outcome, 'served')
  })

  it('starts the refusal count afresh after a ban', async () => {
    clock.set('2026-11-22T13:00:00.000Z')
    const hit = counter(1, 100, { banAfter: 2, banMs: 10_000 })
    assert.deepEqual(await outcomes(hit, 4), ['served', 'limited', 'limited', 'banned'])
    clock.set('2026-11-22T13:00:20.000Z') // the ban is over, the minute is still used up
    assert.deepEqual(await outcomes(hit, 3), ['limited', 'limited', 'banned'])
  })

  it('does not ban for refusals spread over several minutes', async () => {
    clock.set('2026-11-22T14:00:00.000Z')
    const hit = counter(1, 100, { banAfter: 3, banMs: 600_000 })
    for (let minute = 0; minute < 4; minute++) {
      assert.deepEqual(await outcomes(hit, 4), ['served', 'limited', 'limited', 'limited'])
      clock.advance(60_000)
    }
  })

  it('counts each identity on its own', async () => {
    clock.set('2026-11-22T15:00:00.000Z')
    const hit = counter(1, 100)
    assert.equal((await hit()).outcome, 'served')
    assert.equal((await hit()).outcome, 'limited')
    assert.equal((await hit(`ip:127.0.0.${n}`)).outcome, 'served')
  })

  it('applies a changed limit to the counts already made', async () => {
    clock.set('2026-11-22T16:00:00.000Z')
    const identity = `key:changed-${++n}`
    const hit = (perMinute: number) => store.hit({ identity, banIdentity: identity, limits: { perMinute, perDay: 100 }, banAfter: 20, banMs: 1_000 })
    await hit(2)
    await hit(2)
    assert.equal((await hit(2)).outcome, 'limited')
    const raised = await hit(5)
    assert.deepEqual([raised.outcome, raised.minuteCount], ['served', 3])
    assert.equal((await hit(1)).outcome, 'limited', 'a lowered limit below the count refuses')
  })

  // Many requests of one identity in one event-loop turn (the Redis store sends them
  // as one script call): each must get exactly what it would one after another.
  // bannedUntil is meant only when banned (the memory store keeps reporting a past ban).
  const asMeant = (r: HitResult): HitResult => (r.outcome === 'banned' ? r : { ...r, bannedUntil: 0 })
  const inOneTurn = async (hit: () => Promise<HitResult>, times: number) =>
    (await Promise.all(Array.from({ length: times }, () => hit()))).map(asMeant)
  const result = (outcome: HitResult['outcome'], minuteCount: number, dayCount: number, bannedUntil = 0): HitResult => ({
    outcome,
    now: clock.now(),
    minuteCount,
    dayCount,
    bannedUntil,
  })

  it('gives the requests of one turn what they would get one after another: served, then limited, then banned', async () => {
    clock.set('2026-11-22T17:00:30.000Z')
    const hit = counter(3, 100, { banAfter: 2, banMs: 10_000 })
    assert.deepEqual(await inOneTurn(hit, 4), [result('served', 1, 1), result('served', 2, 2), result('served', 3, 3), result('limited', 3, 3)])
    const bannedUntil = clock.now() + 10_000
    assert.deepEqual(await inOneTurn(hit, 4), [
      result('limited', 3, 3),
      result('banned', 3, 3, bannedUntil),
      result('banned', 3, 3, bannedUntil),
      result('banned', 3, 3, bannedUntil),
    ])
    assert.deepEqual(asMeant(await hit()), result('banned', 3, 3, bannedUntil), 'the ban holds for the next turn')
    clock.set('2026-11-22T17:00:45.000Z') // the ban is over, the minute is still used up: refusals count afresh
    assert.deepEqual(await inOneTurn(hit, 4), [
      result('limited', 3, 3),
      result('limited', 3, 3),
      result('banned', 3, 3, clock.now() + 10_000),
      result('banned', 3, 3, clock.now() + 10_000),
    ])
  })

  it('refuses the requests of one turn past the daily quota, and bans on the refusals past banAfter', async () => {
    clock.set('2026-11-22T18:00:00.000Z')
    const hit = counter(100, 5, { banAfter: 3, banMs: 60_000 })
    assert.deepEqual(asMeant(await hit()), result('served', 1, 1))
    const bannedUntil = clock.now() + 60_000
    assert.deepEqual(await inOneTurn(hit, 9), [
      ...[2, 3, 4, 5].map((count) => result('served', count, count)),
      ...Array(3).fill(result('limited', 5, 5)),
      ...Array(2).fill(result('banned', 5, 5, bannedUntil)),
    ])
    clock.set(bannedUntil) // a new minute, the same used-up day
    assert.deepEqual(await inOneTurn(hit, 2), Array(2).fill(result('limited', 0, 5)))
  })

  it('answers every request of a turn that starts while banned with that ban, and does not extend it', async () => {
    clock.set('2026-11-22T19:00:00.000Z')
    const hit = counter(1, 100, { banAfter: 1, banMs: 600_000 })
    assert.deepEqual(await outcomes(hit, 3), ['served', 'limited', 'banned'])
    const bannedUntil = clock.now() + 600_000
    clock.advance(90_000)
    assert.deepEqual(await inOneTurn(hit, 5), Array(5).fill(result('banned', 0, 1, bannedUntil)))
  })

  it('keeps arrival order when the requests of one turn carry different limits', async () => {
    clock.set('2026-11-22T20:00:00.000Z')
    const identity = `key:mixed-${++n}`
    const hit = (perMinute: number) => store.hit({ identity, banIdentity: identity, limits: { perMinute, perDay: 100 }, banAfter: 20, banMs: 1_000 })
    assert.deepEqual((await Promise.all([hit(2), hit(2), hit(2), hit(5), hit(1), hit(5)])).map(asMeant), [
      result('served', 1, 1),
      result('served', 2, 2),
      result('limited', 2, 2),
      result('served', 3, 3),
      result('limited', 3, 3),
      result('served', 4, 4),
    ])
  })

  it('counts each request of a turn at the time it arrived, when the clock moves within the turn', async () => {
    clock.set('2026-11-22T21:00:59.999Z')
    const hit = counter(1, 100)
    const before = [hit(), hit()]
    clock.set('2026-11-22T21:01:00.000Z')
    const after = [hit(), hit()]
    assert.deepEqual(
      (await Promise.all([...before, ...after])).map((r) => [r.outcome, r.now, r.minuteCount, r.dayCount]),
      [
        ['served', clock.now() - 1, 1, 1],
        ['limited', clock.now() - 1, 1, 1],
        ['served', clock.now(), 1, 2],
        ['limited', clock.now(), 1, 2],
      ],
    )
  })

  it('agrees with requests one after another for any limits, history and number in one turn', async () => {
    for (const perMinute of [1, 3]) {
      for (const perDay of [2, 5]) {
        for (const banAfter of [1, 3]) {
          for (const history of [0, 2, 5]) {
            clock.set('2026-11-22T22:00:00.000Z')
            const limits = { banAfter, banMs: 10_000 }
            const oneByOne = counter(perMinute, perDay, limits)
            const together = counter(perMinute, perDay, limits)
            const what = `perMinute ${perMinute}, perDay ${perDay}, banAfter ${banAfter}, ${history} before`
            await outcomes(oneByOne, history)
            await outcomes(together, history)
            const expected: HitResult[] = []
            for (let i = 0; i < 7; i++) expected.push(asMeant(await oneByOne()))
            assert.deepEqual(await inOneTurn(together, 7), expected, what)
            // What the turn left behind counts on: the next minute's ban, quota and refusals.
            clock.set('2026-11-22T22:00:15.000Z')
            assert.deepEqual(await outcomes(together, 4), await outcomes(oneByOne, 4), `${what}, afterwards`)
          }
        }
      }
    }
  })
})
