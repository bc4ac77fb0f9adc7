// A circuit breaker at the store's edge (open-store.ts). A database that went silent (a
// partition, a stuck server) makes every query wait out query_timeout; once one wait
// was given up on, the next calls are refused at once (503) instead of each waiting as
// long, and a probe in the background closes the circuit as soon as the database
// answers again, without waiting for traffic. Refused or reset connections fail fast by
// themselves and do not open it: a restart or a killed connection should cost only
// the requests it caught.
import { StoreUnavailableError } from './store-errors.js'

export interface CircuitBreakerOptions {
  /** Asks the database; resolves when it answers. */
  probe: () => Promise<void>
  /** How often an open circuit probes (500 ms). */
  probeEveryMs?: number
  /** Once per change: true when the circuit opens, false when it closes. */
  onChange?: (open: boolean, error?: unknown) => void
}

export interface CircuitBreaker {
  readonly open: boolean
  /** The error to refuse a call with while the circuit is open, else undefined. */
  refusal(): StoreUnavailableError | undefined
  /** A call was given up on for silence: opens the circuit. */
  trip(error: unknown): void
  close(): void
}

export function createCircuitBreaker({ probe, probeEveryMs = 500, onChange = () => {} }: CircuitBreakerOptions): CircuitBreaker {
  let open = false
  let timer: NodeJS.Timeout | undefined
  let probing = false
  let closed = false
  const refusal = new StoreUnavailableError('the database did not answer in time; refused at once until it answers again', { outcome: 'not_written' })

  function setOpen(next: boolean, error?: unknown) {
    if (next === open || closed) return
    open = next
    if (open) {
      timer = setInterval(tryProbe, probeEveryMs).unref()
      tryProbe()
    } else clearInterval(timer)
    onChange(open, error)
  }

  function tryProbe() {
    // One probe at a time: on a silent database a probe holds a connection until
    // query_timeout; the next starts when it settles, and any answer closes the circuit.
    if (probing) return
    probing = true
    probe()
      .then(() => setOpen(false), () => {})
      .finally(() => (probing = false))
  }


  return {
    get open() {
      return open
    },
    refusal() {
      return open ? refusal : undefined
    },
    trip(error) {
      setOpen(true, error)
    },
    close() {
      closed = true
      clearInterval(timer)
    },
  }
}
