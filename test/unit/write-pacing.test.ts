// How the writes that make events are paced while the webhooks fall behind, on a manual
// clock: time moves, and each second is judged, only when the test says.
import { afterEach, beforeEach, describe, it, mock } from 'node:test'
import assert from 'node:assert/strict'
import { ApiError } from '../../src/errors.js'
import { writePacing, type WritePacingOptions } from '../../src/webhooks/write-pacing.js'

const MAX_LAG = 60_000

function setup(options: Partial<WritePacingOptions> = {}) {
  let now = 0
  let lag: number | undefined = 0
  const pacing = writePacing({ lagMs: () => lag, maxLagMs: MAX_LAG, now: () => now, timer: false, ...options })
  /** Writes asked for: each settles as let through ('went') or refused (the error). */
  const outcomes: (string | ApiError)[] = []
  return {
    pacing,
    setLag: (ms: number | undefined) => void (lag = ms),
    async pass(ms: number) {
      now += ms
      mock.timers.tick(ms)
      // The writes let go settle as microtasks.
      await new Promise((resolve) => setImmediate(resolve))
    },
    /** Asks for `n` permits; answers how many went at once. */
    write(n: number): number {
      let atOnce = 0
      for (let i = 0; i < n; i++) {
        const waiting = pacing.admit()
        if (waiting === undefined) {
          atOnce++
          outcomes.push('went')
        } else {
          const slot = outcomes.push('waiting') - 1
          waiting.then(
            () => void (outcomes[slot] = 'went'),
            (error: ApiError) => void (outcomes[slot] = error),
          )
        }
      }
      return atOnce
    },
    count: (what: 'went' | 'waiting' | 'refused') => outcomes.filter((o) => (what === 'refused' ? o instanceof ApiError : o === what)).length,
    refusals: () => outcomes.filter((o): o is ApiError => o instanceof ApiError),
  }
}

describe('write pacing', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval'] }))
  afterEach(() => mock.timers.reset())

  it('lets every write through at once while the webhooks keep up, whatever the rate', () => {
    const { pacing, setLag, write } = setup()
    setLag(MAX_LAG / 4 - 1)
    assert.equal(write(5_000), 5_000)
    pacing.judge()
    assert.equal(pacing.rate, undefined)
    assert.equal(write(5_000), 5_000)
  })

  it('from a quarter of the bound, lets writes through at half the rate of the second before, in turn', async () => {
    const { pacing, setLag, write, pass, count } = setup()
    assert.equal(write(200), 200)
    setLag(MAX_LAG / 4)
    pacing.judge()
    assert.equal(pacing.rate, 100)
    assert.equal(write(150), 0, 'none saved up: each waits its turn')
    await pass(500)
    assert.ok(Math.abs(count('went') - 250) <= 1, `about 50 more in half a second at 100/s: ${count('went') - 200}`)
    await pass(1_000)
    assert.equal(count('went'), 350)
    assert.equal(count('waiting'), 0)
  })

  it('lets a waiting write that was answered or abandoned meanwhile go without a permit', async () => {
    const { pacing, setLag, write, pass } = setup()
    write(200)
    setLag(MAX_LAG / 4)
    pacing.judge()
    assert.equal(pacing.rate, 100)
    // Ten requests whose clients left while they waited, then one still waiting for its answer.
    let left = false
    const abandoned = Array.from({ length: 10 }, () => pacing.admit(() => left))
    let wanted = false
    void pacing.admit()!.then(() => (wanted = true))
    left = true
    await pass(15)
    assert.equal(wanted, true, 'the one still wanted took the first permit, 10 ms in, not the eleventh')
    await pass(200)
    await Promise.all(abandoned)
  })

  it('refuses at once, 503 with Retry-After, a write that would wait past 2 s', async () => {
    const { pacing, setLag, write, pass, count, refusals } = setup()
    write(200)
    setLag(30_000)
    pacing.judge()
    write(250)
    await pass(0)
    assert.equal(count('refused'), 50, 'the 201st waiting would wait 2.01 s')
    const refusal = refusals()[0]!
    assert.equal(refusal.status, 503)
    assert.equal(refusal.code, 'service_unavailable')
    assert.equal(refusal.headers['retry-after'], '3')
    assert.match(refusal.message, /Webhook deliveries are 30 s behind/)
    await pass(2_000)
    assert.equal(count('went'), 400, 'every write that waited went within 2 s')
  })

  it('slows by a quarter each second the lag grows, speeds up by a twentieth each second it does not, never below 10 a second', () => {
    const { pacing, setLag, write } = setup()
    write(400)
    setLag(20_000)
    pacing.judge()
    assert.equal(pacing.rate, 200)
    setLag(21_000)
    pacing.judge()
    assert.equal(pacing.rate, 150)
    setLag(21_050)
    pacing.judge()
    assert.equal(pacing.rate, 157.5, 'grew by less than a tenth of the second: holding')
    setLag(18_000)
    pacing.judge()
    assert.ok(Math.abs(pacing.rate! - 165.375) < 1e-9)
    for (let lag = 19_000; lag < 40_000; lag += 1_000) {
      setLag(lag)
      pacing.judge()
    }
    assert.equal(pacing.rate, 10)
  })

  it('stops pacing once the lag is back under an eighth of the bound, letting every waiting write go', async () => {
    const { pacing, setLag, write, pass, count } = setup()
    write(40)
    setLag(20_000)
    pacing.judge()
    assert.equal(pacing.rate, 20)
    write(30)
    setLag(MAX_LAG / 8 + 1)
    pacing.judge()
    assert.notEqual(pacing.rate, undefined, 'still over an eighth')
    setLag(MAX_LAG / 8 - 1)
    pacing.judge()
    await pass(0)
    assert.equal(pacing.rate, undefined)
    assert.equal(count('went'), 70)
    assert.equal(write(1_000), 1_000)
  })

  it('predicts the wait of an event written now from how fast the lag grows: a lag of 5 s growing by 0.7 s a second is paced', async () => {
    const { pacing, setLag, write, pass } = setup()
    // The frontier (the oldest event not yet delivered) moves through the events' times at 0.3 of real time.
    let lag = 0
    for (let second = 0; second < 8 && pacing.rate === undefined; second++) {
      write(1_000)
      setLag((lag += 700))
      await pass(1_000)
      pacing.judge()
    }
    assert.notEqual(pacing.rate, undefined, 'paced')
    assert.ok(lag <= 7_000, `while the lag itself was at most 7 s (${lag} ms), under the 15 s it starts from`)
  })

  it('takes a lag that holds still, or shrinks, as it is: the frontier keeps pace', async () => {
    const { pacing, setLag, write, pass } = setup()
    for (let second = 0; second < 10; second++) {
      write(1_000)
      setLag(10_000)
      await pass(1_000)
      pacing.judge()
    }
    assert.equal(pacing.rate, undefined, 'an event written now waits 10 s: not paced')
  })

  it('is never paced while the lag is not known (no dispatcher has measured it yet)', () => {
    const { pacing, setLag, write } = setup()
    setLag(undefined)
    write(100)
    pacing.judge()
    assert.equal(pacing.rate, undefined)
  })

  it('lets every waiting write go when stopped (the server closing)', async () => {
    const { pacing, setLag, write, pass, count } = setup()
    write(20)
    setLag(20_000)
    pacing.judge()
    write(15)
    pacing.stop()
    await pass(0)
    assert.equal(count('went'), 35)
  })
})
