// Whether the API's requests are keeping this process busy, so that the dispatcher in
// the same process can give way to them. A delivery costs the event loop about as much
// as the request whose event it sends; on a saturated instance, delivering at full speed
// would take that share from the requests. Giving way makes delivery later, never lost:
// the outbox keeps every event, and the backlog drains when the requests slacken.
import { performance, type EventLoopUtilization } from 'node:perf_hooks'

export interface RequestPressure {
  /** Counts a request (the HTTP server's 'request' event). */
  onRequest(): void
  /** True when, over the last window, requests arrived and the event loop was busier than the threshold. */
  busy(): boolean
}

export interface RequestPressureOptions {
  /** Event-loop utilization (0–1) above which requests count as keeping it busy. */
  threshold?: number
  /** How long each judgement holds; the utilization is measured over it. */
  windowMs?: number
}

/**
 * The judgement of a window holds for the next. Each window is judged by what happened in
 * it: while the dispatcher gives way, the utilization is the requests' own; when that
 * falls below the threshold it runs at full speed again, and if it then tips the loop
 * over while requests keep coming, it gives way again. Without requests it never does:
 * a backlog drains at full speed on an instance nobody is calling.
 */
export function requestPressure({ threshold = 0.9, windowMs = 1_000 }: RequestPressureOptions = {}): RequestPressure {
  let requests = 0
  let since: EventLoopUtilization = performance.eventLoopUtilization()
  let windowStart = performance.now()
  let busy = false
  return {
    onRequest() {
      requests++
    },
    busy() {
      const now = performance.now()
      if (now - windowStart < windowMs) return busy
      const current = performance.eventLoopUtilization()
      busy = requests > 0 && performance.eventLoopUtilization(current, since).utilization > threshold
      since = current
      windowStart = now
      requests = 0
      return busy
    },
  }
}
