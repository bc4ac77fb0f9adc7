// Whether the API's requests are keeping this process busy, so that the dispatcher in
// the same process can give way to them. A delivery costs the event loop about as much
// as the request whose event it sends, and the database a few row writes; on a saturated
// instance, delivering at full speed would take that share from the requests. Giving way
// makes delivery later, never lost: the outbox keeps every event, and the backlog drains
// when the requests slacken.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'

export interface RequestPressure {
  /** Counts a request (the HTTP server's 'request' event) and how long it is in flight. */
  onRequest(request: IncomingMessage, response: ServerResponse): void
  /** True when, over the last window or the part of this one gone by, requests kept the process busy. */
  busy(): boolean
  stop(): void
}

export interface RequestPressureOptions {
  /** Event-loop utilization (0–1) above which requests count as keeping it busy. */
  threshold?: number
  /** Requests in flight, on average over a window, from which they count as queueing. */
  queueing?: number
  /** How often the judgement is made, over the window just ended. */
  windowMs?: number
}

/**
 * Busy: requests came, and either the event loop was busier than the threshold (this
 * process is the bottleneck: SQLite) or they were queueing, many in flight at once on
 * average (the database is: PostgreSQL, where the loop waits more than it works).
 *
 * Judged every window, whether or not the dispatcher asks (a window that began before
 * the requests would otherwise average them with the quiet before). Each judgement holds
 * for the next window. While the dispatcher gives way, the measures are the requests'
 * own; when they fall below the thresholds it runs at full speed again, and if it then
 * tips the process over while requests keep coming, it gives way again. Without requests
 * it never does: a backlog drains at full speed on an instance nobody is calling. At
 * saturation the utilization stays above 0.99 on SQLite, and 50 connections keep about
 * 50 requests in flight, so the thresholds leave margin.
 */
export function requestPressure({ threshold = 0.9, queueing = 16, windowMs = 250 }: RequestPressureOptions = {}): RequestPressure {
  let requests = 0
  let since = performance.eventLoopUtilization()
  let judged = false
  // The time integral of the requests in flight, since the window began: its mean is the integral over the window's length.
  let inFlight = 0
  let inFlightArea = 0
  let changedAt = performance.now()
  const inFlightChanges = (by: number) => {
    const now = performance.now()
    inFlightArea += inFlight * (now - changedAt)
    changedAt = now
    inFlight += by
  }
  const loaded = (elapsedMs: number, utilization: number) => {
    inFlightChanges(0)
    return requests > 0 && (utilization > threshold || inFlightArea / elapsedMs >= queueing)
  }

  const timer = setInterval(() => {
    const current = performance.eventLoopUtilization()
    const window = performance.eventLoopUtilization(current, since)
    judged = loaded(window.idle + window.active, window.utilization)
    since = current
    requests = 0
    inFlightArea = 0
  }, windowMs)
  timer.unref()
  const finished = () => inFlightChanges(-1)
  return {
    onRequest(_request, response) {
      requests++
      inFlightChanges(1)
      response.once('close', finished)
    },
    busy() {
      if (judged) return true
      // A burst that fills the process while a backlog drains is not kept waiting for the window's end.
      const sofar = performance.eventLoopUtilization(performance.eventLoopUtilization(), since)
      const elapsed = sofar.idle + sofar.active
      return elapsed >= windowMs / 5 && loaded(elapsed, sofar.utilization)
    },
    stop: () => clearInterval(timer),
  }
}
