// Whether the API's requests are keeping this process busy, so that the dispatcher in
// the same process can give way to them. A delivery costs the event loop about as much
// as the request whose event it sends; on a saturated instance, delivering at full speed
// would take that share from the requests. Giving way makes delivery later, never lost:
// the outbox keeps every event, and the backlog drains when the requests slacken.
import { performance } from 'node:perf_hooks'

export interface RequestPressure {
  /** Counts a request (the HTTP server's 'request' event). */
  onRequest(): void
  /** True when, over the last window or the part of this one gone by, requests arrived and the event loop was busier than the threshold. */
  busy(): boolean
  stop(): void
}

export interface RequestPressureOptions {
  /** Event-loop utilization (0–1) above which requests count as keeping it busy. */
  threshold?: number
  /** How often the judgement is made, over the window just ended. */
  windowMs?: number
}

/**
 * Judged every window, whether or not the dispatcher asks (a window that began before
 * the requests would otherwise average them with the quiet before). Each judgement holds
 * for the next window. While the dispatcher gives way, the utilization is the requests'
 * own; when that falls below the threshold it runs at full speed again, and if it then
 * tips the loop over while requests keep coming, it gives way again. Without requests it
 * never does: a backlog drains at full speed on an instance nobody is calling. At
 * saturation the utilization stays above 0.99 (bench/results.md), so 0.9 leaves margin.
 */
export function requestPressure({ threshold = 0.9, windowMs = 250 }: RequestPressureOptions = {}): RequestPressure {
  let requests = 0
  let since = performance.eventLoopUtilization()
  let judged = false
  const timer = setInterval(() => {
    const current = performance.eventLoopUtilization()
    judged = requests > 0 && performance.eventLoopUtilization(current, since).utilization > threshold
    since = current
    requests = 0
  }, windowMs)
  timer.unref()
  return {
    onRequest() {
      requests++
    },
    busy() {
      if (judged) return true
      // A burst that fills the loop while a backlog drains is not kept waiting for the window's end.
      const sofar = performance.eventLoopUtilization(performance.eventLoopUtilization(), since)
      return requests > 0 && sofar.idle + sofar.active >= windowMs / 5 && sofar.utilization > threshold
    },
    stop: () => clearInterval(timer),
  }
}
