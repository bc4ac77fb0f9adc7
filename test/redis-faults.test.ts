// A Redis that goes silent (a network partition: no answer, no error) behind a TCP
// proxy of the test's own, under a server: no request waits on it past the first
// timeout (the circuit opens), nothing refused is charged later when the held bytes
// arrive (a timed-out connection is reset, not reused), and the way back needs no
// traffic.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { systemClock } from '../src/clock.js'
import { loadConfig } from '../src/config.js'
import { createRateLimiterFromConfig } from '../src/rate-limit/from-config.js'
import { startTestServer } from './helpers/server.js'
import { needs, uniqueRedisPrefix } from './helpers/services.js'
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.js'

async function eventually<T>(what: string, withinMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = performance.now() + withinMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (performance.now() > deadline) assert.fail(`${what}: not within ${withinMs} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

interface Usage {
  minute: { used: number }
}

/** What a test that must stay in one minute window may take, at most, from its first request to its last look. */
const MINUTE_END_MARGIN_MS = 15_000

/** Waits for the next minute when fewer than `marginMs` are left of this one. */
async function clearOfMinuteEnd(marginMs: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000)
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 50))
}

describe('Redis silent behind a partition', async () => {
  if (!(await needs('redis', 'Redis silent behind a partition'))) return
  let proxy: TcpProxy
  before(async () => {
    proxy = await startTcpProxy({ host: '127.0.0.1', port: 6379 })
  })
  after(() => proxy.stop())

  it('fail open: a key Redis banned stays banned here while Redis is silent, not served again from empty counters', async () => {
    const url = `redis://127.0.0.1:${proxy.port}`
    const config = loadConfig({ REDIS_URL: url, PETSTORE_REDIS_PREFIX: uniqueRedisPrefix(), PETSTORE_BAN_AFTER: '2', PETSTORE_BAN_SECONDS: '600' })
    const limiter = createRateLimiterFromConfig(config, systemClock, { onRedisTransition: () => {} })
    await limiter.ready()
    const server = await startTestServer({ limiter, env: { REDIS_URL: url } })
    try {
      const key = await server.createKey('enterprise', { perMinute: 2, perDay: 1_000 })
      await clearOfMinuteEnd(MINUTE_END_MARGIN_MS)
      // Its 2, then more than 2 refused: banned, in Redis.
      const answers = []
      for (let i = 0; i < 5; i++) answers.push((await server.request<{ code: string }>('/v1/pets', { key })).body.code)
      assert.equal(answers.at(-1), 'key_banned', answers.join(' '))
      // Past the second for which this instance takes Redis's word without asking again.
      await new Promise((resolve) => setTimeout(resolve, 1_100))
      proxy.silence()
      const during = []
      for (let i = 0; i < 10; i++) during.push((await server.request('/v1/pets', { key })).status)
      assert.deepEqual(during, Array(10).fill(429), 'banned throughout, the request that found Redis silent included')
    } finally {
      proxy.heal()
      await server.close()
      await limiter.close()
    }
  })

  for (const mode of ['open', 'closed'] as const) {
    it(`fail ${mode}: waits out one timeout at most, charges nothing it did not count, and is back within 2 s of the heal without traffic`, async () => {
      const url = `redis://127.0.0.1:${proxy.port}`
      const config = loadConfig({ REDIS_URL: url, PETSTORE_REDIS_PREFIX: uniqueRedisPrefix(), PETSTORE_REDIS_FAILURE: mode })
      const limiter = createRateLimiterFromConfig(config, systemClock, { onRedisTransition: () => {} })
      await limiter.ready()
      const server = await startTestServer({ limiter, env: { REDIS_URL: url } })
      const gauge = async () => /^petstore_rate_limiter_degraded (\d)$/m.exec((await server.request('/metrics')).text)?.[1]
      try {
        const key = await server.createKey('free')
        // The minute window is the clock's: a run that crossed into the next minute would
        // find the count before the partition gone (a flake seen once, 0 !== 1).
        await clearOfMinuteEnd(MINUTE_END_MARGIN_MS)
        assert.equal((await server.request('/v1/pets', { key })).status, 200)

        proxy.silence()
        const waits: number[] = []
        for (let i = 0; i < 30; i++) {
          const started = performance.now()
          const res = await server.request('/v1/pets', { key })
          waits.push(performance.now() - started)
          assert.equal(res.status, mode === 'open' ? 200 : 503, res.text)
        }
        waits.sort((a, b) => a - b)
        assert.ok(waits[15]! < 50, `the median request waited ${waits[15]!.toFixed(0)} ms on a silent Redis (every wait: ${waits.map((w) => w.toFixed(0)).join(' ')})`)
        assert.ok(waits[27]! < 200, `more than two requests waited out a timeout: ${waits.map((w) => w.toFixed(0)).join(' ')}`)
        assert.equal(await gauge(), '1')

        proxy.heal()
        const healed = performance.now()
        await eventually('back on Redis without a /v1 request', 2_500, async () => ((await gauge()) === '0' ? true : undefined))
        assert.ok(performance.now() - healed < 2_500)
        // Give anything held in the partition time to arrive, as it would have without the reset.
        await new Promise((r) => setTimeout(r, 300))
        const usage = await server.request<Usage>('/v1/usage', { key })
        assert.equal(usage.status, 200, usage.text)
        assert.equal(usage.body.minute.used, 1, 'only the request counted in Redis before the partition: none of those answered meanwhile was charged later')
      } finally {
        proxy.heal()
        await server.close()
        await limiter.close()
      }
    })
  }
})
