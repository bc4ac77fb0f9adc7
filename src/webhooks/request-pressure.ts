// Whether the API's requests are keeping this process busy, so that the dispatcher in
// the same process can give way to them. A delivery costs the event loop about as much
// as the request whose event it sends, and the database a few row writes; on a saturated
// instance, delivering at full speed would take that share from the requests. Giving way
// makes delivery later, never lost: the outbox keeps every event, and the backlog drains
// when the requests slacken.
//
// Nothing is timed per request: the requests arrived and in flight are counts the HTTP
// layer keeps anyway (plugins/in-flight.ts, for the request deadline), read a few
// times a window; the mean in flight is the mean of those readings.
import { performance } from 'node:perf_hooks'

/** The API's requests, as the HTTP layer counts them (plugins/in-flight.ts). */
export interface RequestCounts {
  /** Requests that arrived since the process started. */
  started(): number
  /** Requests arrived and not yet answered. */
  inFlight(): number
}

export interface RequestPressure {
  /** True while requests keep the process busy and the dispatcher is to give way. */
  busy(): boolean
  /** Judges the window just ended (the timer does, every window; tests on a manual clock call it). */
  judge(): void
  stop(): void
}

/** The two measures, from the process by default; a test's manual clock moves them by hand. */
export interface PressureClock {
  /** Monotonic milliseconds. */
  now(): number
  /** Milliseconds the event loop has spent working (not waiting), in all. */
  loopActive(): number
}

const processClock: PressureClock = {
  now: () => performance.now(),
  loopActive: () => performance.eventLoopUtilization().active,
}

export interface RequestPressureOptions {
  /** The requests to judge by. */
  requests: RequestCounts
  /** Event-loop utilization (0–1) above which requests count as keeping it busy (0.9). */
  threshold?: number
  /** …and below which they no longer do, once they did (0.75): hysteresis, so that it does not flap at the edge. */
  release?: number
  /** Requests in flight, on average over a window, from which they count as queueing (16); they stop counting below half. */
  queueing?: number
  /** How often the judgement is made, over the window just ended (250 ms); the requests in flight are read ten times a window. */
  windowMs?: number
  /**
   * The floor: after giving way this long without a break (10 s), it says "not busy" for
   * `breakMs` (1 s), so that the dispatcher runs at full speed at least that share of
   * the time however long the requests keep coming, and the backlog's age stays bounded.
   */
  maxYieldMs?: number
  breakMs?: number
  /**
   * How far behind the dispatcher is, as it last measured (dispatcher.ts `lagMs`: the age
   * of the events its fan-out, and its claims for its best-served endpoint, have yet to
   * get to); undefined when not known. Never busy from the moment
   * this reaches `maxLagMs` until it is back under half of it: the floor that keeps the
   * lag bounded however long the requests keep coming.
   */
  lagMs?: () => number | undefined
  /** 30 s: caught up at full speed from there, so that the oldest pending event stays under 60 s. */
  maxLagMs?: number
  clock?: PressureClock
  /** Judge every window on a timer (true); false: the caller calls judge() (tests). */
  timer?: boolean
}

/**
 * Busy: requests came or are still in flight, and either the event loop was busier than
 * the threshold (this process is the bottleneck: SQLite) or they were queueing, many in
 * flight at once on average (the database is: PostgreSQL, where the loop waits more than
 * it works). Requests stuck in flight count although no new one arrives.
 *
 * Judged every window, whether or not the dispatcher asks (a window that began before
 * the requests would otherwise average them with the quiet before). Each judgement holds
 * for the next window. Once busy, it stays busy until both measures fall below their
 * lower marks (`release`, half of `queueing`). Without requests it never is: a backlog
 * drains at full speed on an instance nobody is calling. At saturation the utilization
 * stays above 0.99 on SQLite, and 50 connections keep about 50 requests in flight, so
 * the thresholds leave margin.
 */
export function requestPressure({
  requests,
  threshold = 0.9,
  release = 0.75,
  queueing = 16,
  windowMs = 250,
  maxYieldMs = 10_000,
  breakMs = 1_000,
  lagMs = () => undefined,
  maxLagMs = 30_000,
  clock = processClock,
  timer = true,
}: RequestPressureOptions): RequestPressure {
  let windowStart = clock.now()
  let startedBefore = requests.started()
  let activeAtStart = clock.loopActive()
  let judged = false
  /** Since when it has said busy without a break; the end of the current break. */
  let yieldingSince: number | undefined
  let breakUntil = -Infinity
  // The time integral of the requests in flight since the window began, from readings: a reading stands for the time since the one before.
  let inFlightArea = 0
  let readAt = windowStart
  const readInFlight = () => {
    const now = clock.now()
    const inFlight = requests.inFlight()
    inFlightArea += inFlight * (now - readAt)
    readAt = now
    return inFlight
  }
  /** Whether the span since the window began was loaded; `holding`: it was busy already, so the lower marks apply. */
  const loaded = (holding: boolean) => {
    const inFlight = readInFlight()
    const elapsed = clock.now() - windowStart
    if (elapsed <= 0 || (requests.started() === startedBefore && inFlight === 0)) return false
    const utilization = (clock.loopActive() - activeAtStart) / elapsed
    const meanInFlight = inFlightArea / elapsed
    return holding ? utilization > release || meanInFlight >= queueing / 2 : utilization > threshold || meanInFlight >= queueing
  }

  function judge() {
    judged = loaded(judged)
    windowStart = clock.now()
    activeAtStart = clock.loopActive()
    readAt = windowStart
    startedBefore = requests.started()
    inFlightArea = 0
  }

  /** Catching up: the lag reached `maxLagMs`, and has not yet come back under half of it. */
  let catchingUp = false

  /**
   * The floors: a lag of `maxLagMs` lets the dispatcher run at full speed until it is
   * halved; and busy for `maxYieldMs` in a row earns it a break.
   */
  function floor(busy: boolean): boolean {
    const lag = lagMs()
    catchingUp = lag !== undefined && lag >= (catchingUp ? maxLagMs / 2 : maxLagMs)
    if (catchingUp) {
      yieldingSince = undefined
      return false
    }
    const now = clock.now()
    if (now < breakUntil) return false
    if (!busy) {
      yieldingSince = undefined
      return false
    }
    yieldingSince ??= now
    if (now - yieldingSince < maxYieldMs) return true
    breakUntil = now + breakMs
    yieldingSince = undefined
    return false
  }

  const interval = timer ? setInterval(judge, windowMs) : undefined
  const reading = timer ? setInterval(readInFlight, windowMs / 10) : undefined
  interval?.unref()
  reading?.unref()
  return {
    busy() {
      // A burst that fills the process while a backlog drains is not kept waiting for the window's end.
      const now = judged || (clock.now() - windowStart >= windowMs / 5 && loaded(false))
      return floor(now)
    },
    judge,
    stop() {
      clearInterval(interval)
      clearInterval(reading)
    },
  }
}
