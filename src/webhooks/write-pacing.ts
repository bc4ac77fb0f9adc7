// Writes that make events are paced while the webhooks fall behind, so that under a
// load that writes events faster than they can be delivered, the oldest one waiting
// stays within PETSTORE_WEBHOOK_MAX_LAG (issue 35). Once a backlog exists, holding the
// dispatcher to full speed is not enough: with events written at P a second and
// delivered at D < P, the wait keeps growing as long as the writes do. Only the writes
// can give, and they must give early, well before the bound.
//
// The measure is the wait an event written now would have: the lag (how old the oldest
// event not yet delivered is, the dispatcher's `lagMs`) over the speed at which that
// frontier moves through the events' times. Events written 3 times as fast as they are
// delivered move it at a third of real time, so a lag of 5 s means 15 s for an event
// written now; the lag alone would see the trouble far too late. A control loop judged
// once a second: from a predicted wait of a quarter of the bound (15 s of 60), the writes
// that make events (creates, changes and removals of pets, categories and orders) get
// permits at half the rate they were let through in the second before; the rate falls
// by a quarter each second the predicted wait still grows, rises by a twentieth each
// second it does not, and pacing ends once it is back under an eighth of the bound. A
// write waits for its permit in turn; one that would wait past `maxWaitMs` is answered
// 503 at once, before its body is read, with a Retry-After.
//
// The lag is the dispatcher's own (dispatcher.ts `lagMs`): how far behind it is at
// fanning out, and at claiming for its best-served endpoint. A receiver that is slow or
// never answers falls behind alone, and slows nobody's writes.
import { performance } from 'node:perf_hooks'
import { ApiError } from '../errors.js'

export interface WritePacing {
  /**
   * Undefined: the write goes now. Else it goes when the promise resolves; it rejects
   * (503) when the wait would be too long. `gone`: the request was answered meanwhile
   * (its deadline) or its client left: it is let go without a permit.
   */
  admit(gone?: () => boolean): Promise<void> | undefined
  /** The permits a second while writes are paced; undefined while they are not. */
  readonly rate: number | undefined
  /** Judges the second just ended (the timer does; tests on a manual clock call it). */
  judge(): void
  /** Lets every waiting write go, and stops. */
  stop(): void
}

export interface WritePacingOptions {
  /** How far behind the webhooks are, in ms; undefined when not known (never paced then). */
  lagMs: () => number | undefined
  /** The bound on the lag (PETSTORE_WEBHOOK_MAX_LAG); pacing starts at a quarter of it. */
  maxLagMs: number
  /** How long a write may wait for its permit (2 s); beyond, it is refused at once. */
  maxWaitMs?: number
  /** How often the rate is judged (1 s). */
  windowMs?: number
  /** Monotonic milliseconds. */
  now?: () => number
  /** Judge on a timer (true); false: the caller calls judge() (tests). */
  timer?: boolean
  /** Told when pacing starts (the rate) and ends (undefined), with the predicted wait in ms: server.ts logs it. */
  onChange?: (rate: number | undefined, waitMs: number) => void
}

/** The rate never falls below this many writes a second: slowed, never stopped. */
const MIN_RATE = 10
/** The frontier's speed is taken as at least this (of real time): a stalled dispatcher predicts a long wait, not an infinite one. */
const MIN_SPEED = 0.05

export function writePacing({ lagMs, maxLagMs, maxWaitMs = 2_000, windowMs = 1_000, now = () => performance.now(), timer = true, onChange = () => {} }: WritePacingOptions): WritePacing {
  const start = maxLagMs / 4
  const until = maxLagMs / 8
  /** Permits a second, while pacing. */
  let rate: number | undefined
  let tokens = 0
  let filledAt = now()
  /** Writes let through in the window so far: where the first rate comes from. */
  let admitted = 0
  let lastWait: number | undefined
  /** Where the dispatcher is (now less its lag), on `now`'s scale, at the last judgement; and how fast that moves (smoothed). */
  let frontier: { at: number; from: number } | undefined
  let speed = 1
  const waiting: { go: () => void; gone: () => boolean }[] = []
  /** The lag at the last judgement, for a refusal's message. */
  let judgedLag = 0
  let releaseTimer: NodeJS.Timeout | undefined

  /**
   * Permits accrue at `rate`; at most a tenth of a second's worth is saved up while no
   * write waits (no burst after a quiet spell). While writes wait, none is lost to a
   * timer that fires late.
   */
  function fill(at: number) {
    if (rate === undefined) return
    const saved = tokens + ((at - filledAt) * rate) / 1000
    tokens = waiting.length > 0 ? saved : Math.min(Math.max(1, rate / 10), saved)
    filledAt = at
  }

  function release() {
    releaseTimer = undefined
    fill(now())
    while (waiting.length > 0) {
      // One answered or abandoned meanwhile goes without a permit.
      const free = waiting[0]!.gone()
      if (!free && tokens < 1) break
      if (!free) {
        tokens--
        admitted++
      }
      waiting.shift()!.go()
    }
    if (waiting.length > 0 && rate !== undefined) releaseTimer = setTimeout(release, Math.max(1, ((1 - tokens) * 1000) / rate))
  }

  function letAllGo() {
    clearTimeout(releaseTimer)
    releaseTimer = undefined
    admitted += waiting.length
    for (const write of waiting.splice(0)) write.go()
  }

  function admit(gone: () => boolean = () => false): Promise<void> | undefined {
    if (rate === undefined) {
      admitted++
      return undefined
    }
    fill(now())
    if (waiting.length === 0 && tokens >= 1) {
      tokens--
      admitted++
      return undefined
    }
    const waitMs = ((waiting.length + 1 - tokens) * 1000) / rate
    if (waitMs > maxWaitMs) {
      const lag = Math.round(judgedLag / 1000)
      return Promise.reject(
        new ApiError(
          'service_unavailable',
          `Webhook deliveries are ${lag} s behind, so writes that make events are being slowed until they catch up; this one would have waited more than ${maxWaitMs / 1000} s. Nothing was done: retry after Retry-After seconds.`,
          // Expected under a saturating load: the request's own log line tells it, not an error line each.
          { headers: { 'retry-after': String(Math.min(30, Math.max(1, Math.ceil(waitMs / 1000)))) }, expected: true },
        ),
      )
    }
    return new Promise<void>((go) => {
      waiting.push({ go, gone })
      releaseTimer ??= setTimeout(release, Math.max(1, ((1 - tokens) * 1000) / rate!))
    })
  }

  /** How long an event written now would wait, predicted: the lag over the speed of the frontier; undefined when the lag is not known. */
  function predictedWait(): number | undefined {
    const lag = lagMs()
    const at = now()
    judgedLag = lag ?? 0
    if (lag === undefined) {
      frontier = undefined
      return undefined
    }
    const from = at - lag
    // Each sample within [0, 1]: one jump of the lag (the fan-out caught up, another endpoint best served) must not hide a stall for seconds after.
    if (frontier !== undefined && at > frontier.at) speed = 0.7 * speed + 0.3 * Math.min(1, Math.max(0, (from - frontier.from) / (at - frontier.at)))
    frontier = { at, from }
    // Under a quarter of the start, a lag is the noise of one poll (a dispatcher giving way claims once a second): no prediction from it.
    return lag < start / 4 ? lag : lag / Math.max(MIN_SPEED, speed)
  }

  function judge() {
    const wait = predictedWait()
    if (rate === undefined) {
      if (wait !== undefined && wait >= start) {
        rate = Math.max(MIN_RATE, (admitted * 1000) / windowMs / 2)
        tokens = 0
        filledAt = now()
        onChange(rate, wait)
      }
    } else if (wait === undefined || wait < until) {
      rate = undefined
      letAllGo()
      onChange(undefined, wait ?? 0)
    } else if (lastWait !== undefined && wait > lastWait + windowMs / 10) rate = Math.max(MIN_RATE, rate * 0.75)
    else rate *= 1.05
    lastWait = wait
    admitted = 0
  }

  const judging = timer ? setInterval(judge, windowMs) : undefined
  judging?.unref()

  return {
    admit,
    get rate() {
      return rate
    },
    judge,
    stop() {
      clearInterval(judging)
      rate = undefined
      letAllGo()
    },
  }
}
