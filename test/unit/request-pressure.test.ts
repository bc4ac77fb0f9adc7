// When the dispatcher gives way, on a manual clock: time and the event loop's work move
// only when told, and each window is judged when the test says, so nothing depends on
// how busy the machine running the tests is.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { requestPressure, type RequestPressureOptions } from '../../src/webhooks/request-pressure.js'

/** Time and the loop's work, by hand: `pass(ms, utilization)` moves both. */
function manualClock() {
  let now = 0
  let active = 0
  return {
    now: () => now,
    loopActive: () => active,
    pass(ms: number, utilization: number) {
      now += ms
      active += ms * utilization
    },
  }
}

/** The counts the HTTP layer keeps (plugins/in-flight.ts), by hand. */
function requestCounts() {
  let started = 0
  let inFlight = 0
  return {
    started: () => started,
    inFlight: () => inFlight,
    /** A request the server has begun answering; `done` ends it. */
    request() {
      started++
      inFlight++
      return { done: () => void inFlight-- }
    },
  }
}

function setup(options: Partial<RequestPressureOptions> = {}) {
  const clock = manualClock()
  const counts = requestCounts()
  const pressure = requestPressure({ windowMs: 250, ...options, requests: counts, clock, timer: false })
  const request = counts.request
  /** One window of `utilization`, with `requests` answered during it, then judged. */
  const window = (utilization: number, requests = 1) => {
    for (let i = 0; i < requests; i++) request().done()
    clock.pass(250, utilization)
    pressure.judge()
  }
  return { clock, pressure, request, window }
}

describe('request pressure (when the dispatcher gives way)', () => {
  it('is busy when requests came and the loop was busy, and not when either is missing', () => {
    const { pressure, window } = setup()
    window(0.99, 0)
    assert.equal(pressure.busy(), false, 'a busy loop without requests (the dispatcher itself, catching up)')
    window(0.95)
    assert.equal(pressure.busy(), true, 'requests and a busy loop')
    window(0.1)
    assert.equal(pressure.busy(), false, 'requests, but an idle loop')
  })

  it('is busy when requests queue although the loop is idle (the database is the bottleneck), and not once they are answered', () => {
    const { clock, pressure, request, window } = setup()
    const waiting = Array.from({ length: 20 }, () => request())
    clock.pass(250, 0.1)
    pressure.judge()
    assert.equal(pressure.busy(), true, '20 in flight throughout')
    for (const r of waiting) r.done()
    window(0.1)
    assert.equal(pressure.busy(), false, 'answered at once')
  })

  it('counts requests stuck in flight although no new one arrives', () => {
    const { clock, pressure, request, window } = setup()
    const stuck = Array.from({ length: 20 }, () => request())
    for (let i = 0; i < 3; i++) {
      clock.pass(250, 0.05)
      pressure.judge()
      assert.equal(pressure.busy(), true, `window ${i + 1}: still 20 in flight, none new`)
    }
    for (const r of stuck) r.done()
    window(0.05, 0)
    assert.equal(pressure.busy(), false)
  })

  it('holds until both measures fall below their lower marks (hysteresis)', () => {
    const { pressure, window } = setup({ threshold: 0.9, release: 0.75 })
    window(0.8)
    assert.equal(pressure.busy(), false, '0.8 does not make it busy')
    window(0.95)
    assert.equal(pressure.busy(), true)
    window(0.8)
    assert.equal(pressure.busy(), true, '0.8 keeps it busy')
    window(0.7)
    assert.equal(pressure.busy(), false, 'below 0.75 it lets go')
    window(0.8)
    assert.equal(pressure.busy(), false, 'and 0.8 is not enough to take it again')
  })

  it('gives the dispatcher a break after giving way for maxYieldMs in a row: the floor', () => {
    const { clock, pressure, window } = setup({ maxYieldMs: 10_000, breakMs: 1_000 })
    window(0.99)
    const answers: boolean[] = []
    // 14 s of saturation, the dispatcher asking every 250 ms.
    for (let t = 0; t < 56; t++) {
      answers.push(pressure.busy())
      window(0.99)
    }
    assert.deepEqual(answers.slice(0, 40), Array(40).fill(true), 'gives way for 10 s')
    assert.deepEqual(answers.slice(40, 44), Array(4).fill(false), 'then runs at full speed for 1 s')
    assert.deepEqual(answers.slice(44), Array(12).fill(true), 'then gives way again')
    assert.ok(clock.now() > 14_000)
  })

  it('lets the dispatcher catch up at full speed once it is maxLagMs behind, until the lag is halved: the lag floor', () => {
    let lag: number | undefined
    const { clock, pressure, window } = setup({ maxYieldMs: 60_000, lagMs: () => lag, maxLagMs: 30_000 })
    const answers = (lags: (number | undefined)[]) =>
      lags.map((value) => {
        lag = value
        const answer = pressure.busy()
        window(0.99)
        return answer
      })
    window(0.99)
    // Saturated throughout: only the lag decides.
    assert.deepEqual(answers([undefined, 0, 10_000, 29_999]), [true, true, true, true], 'behind by less than 30 s: it gives way')
    assert.deepEqual(answers([30_000, 40_000, 20_000, 15_001]), [false, false, false, false], 'from 30 s, full speed, until the lag is halved')
    assert.deepEqual(answers([14_999, 20_000, 29_000]), [true, true, true], 'under 15 s it gives way again, and goes on doing so up to 30 s')
    assert.deepEqual(answers([31_000, undefined]), [false, true], 'a lag not known is no reason to catch up')
    assert.ok(clock.now() < 60_000, 'the 60 s floor of maxYieldMs played no part')
  })

  it('is busy before its window ends when requests already fill the loop', () => {
    const { clock, pressure, request } = setup({ windowMs: 1_000 })
    request().done()
    clock.pass(300, 0.95)
    assert.equal(pressure.busy(), true)
  })

  it('measures the process itself by default', async () => {
    await new Promise((resolve) => setTimeout(resolve, 10)) // the event loop measures nothing until it has started
    const counts = requestCounts()
    const pressure = requestPressure({ requests: counts, threshold: 0.5, windowMs: 1_000 })
    try {
      counts.request()
      const until = performance.now() + 300
      while (performance.now() < until);
      assert.equal(pressure.busy(), true)
    } finally {
      pressure.stop()
    }
  })
})
