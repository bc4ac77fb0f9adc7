// A bound on work that holds a scarce thing (a pool's connections, a connection of its
// own): at most `permits` at once, at most `queue` more waiting their turn, in order,
// each for at most `maxWaitMs`; any beyond, or waiting longer, is refused (StoreBusyError:
// 503 with Retry-After, in the request log as any answer is, not logged as an error)
// rather than run later for a caller the request deadline has already answered.
import { StoreBusyError } from './store-errors.js'

export type Gate = <T>(work: () => Promise<T>) => Promise<T>

export interface GateOptions {
  permits: number
  queue: number
  maxWaitMs: number
  /** What the work is, for the refusal: "searches". */
  what: string
}

export function createGate({ permits, queue, maxWaitMs, what }: GateOptions): Gate {
  const waiting: { admit: () => void; timer: NodeJS.Timeout }[] = []
  const busy = () => new StoreBusyError(what)
  return async (work) => {
    if (permits > 0) permits--
    else if (waiting.length >= queue) throw busy()
    else {
      await new Promise<void>((resolve, reject) => {
        const waiter = {
          admit: () => {
            clearTimeout(waiter.timer)
            resolve()
          },
          timer: setTimeout(() => {
            waiting.splice(waiting.indexOf(waiter), 1)
            reject(busy())
          }, maxWaitMs),
        }
        waiting.push(waiter)
      })
    }
    try {
      return await work()
    } finally {
      // The permit passes to the next in line, or back.
      const next = waiting.shift()
      if (next) next.admit()
      else permits++
    }
  }
}
