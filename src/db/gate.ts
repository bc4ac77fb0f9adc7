// A bound on work that holds a scarce thing (a pool's connections, a connection of its
// own): at most `permits` at once, at most `queue` more waiting their turn, in order;
// any beyond are refused at once, as a database too busy to answer (503, Retry-After),
// rather than queued behind work their callers may have stopped waiting for.
import { StoreUnavailableError } from './store-errors.js'

export type Gate = <T>(work: () => Promise<T>) => Promise<T>

export function createGate(permits: number, queue: number, what: string): Gate {
  const waiting: (() => void)[] = []
  return async (work) => {
    if (permits > 0) permits--
    else if (waiting.length >= queue) throw new StoreUnavailableError(`too many ${what} at once`, { outcome: 'not_written' })
    else await new Promise<void>((resolve) => waiting.push(resolve))
    try {
      return await work()
    } finally {
      // The permit passes to the next in line, or back.
      const next = waiting.shift()
      if (next) next()
      else permits++
    }
  }
}
