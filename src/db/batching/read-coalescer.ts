// Identical reads asked for in one event-loop turn run once, and everyone who asked
// gets that one result. It is not a cache: the read is sent to the database only
// after the turn in which all of its callers arrived, so it sees every commit that
// any of them could have known about (the database takes its snapshot when the
// statement starts). A caller arriving once the read is on its way waits for a
// read of its own. Used where freshness cannot be proven otherwise (PostgreSQL,
// written by other instances), and for the SQLite page cache's version check.
//
// `oneAtATime`: at most one read of a key is on its way; the callers that arrive
// meanwhile gather for the next one, which starts when it ends (as the turn batcher's
// writes do). Without it, a read slower than a turn (a search scanning thousands of
// rows, 1–2 ms at 1,000,000 pets on PostgreSQL) went out once a turn, each with the few
// callers of its turn, and the copies queued for the pool's four connections: the
// database did the same work over and over (p99 591 ms, bench/results.md). The next
// read still starts after every one of its callers arrived.

/** `key` must name the read completely: callers that join a read get its result, whatever their own `read` was. */
export type Coalesced<T> = (key: string, read: () => Promise<T>) => Promise<T>

export interface ReadCoalescerOptions {
  /** At most one read of a key on its way; callers arriving meanwhile share the next. */
  oneAtATime?: boolean
}

export function createReadCoalescer<T>({ oneAtATime = false }: ReadCoalescerOptions = {}): Coalesced<T> {
  // Reads not started yet, which a caller may still join.
  const gathering = new Map<string, Promise<T>>()
  // With oneAtATime: the read of each key on its way, which the next one waits for.
  const underWay = new Map<string, Promise<T>>()
  const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))
  const settled = (read: Promise<T>) =>
    read.then(
      () => {},
      () => {},
    )
  return (key, read) => {
    let result = gathering.get(key)
    if (!result) {
      const previous = oneAtATime ? underWay.get(key) : undefined
      result = (previous ? settled(previous) : nextTurn()).then(() => {
        // From here on, callers with this key start a new read: this one may already be running.
        gathering.delete(key)
        const reading = read()
        if (oneAtATime) {
          underWay.set(key, reading)
          void settled(reading).then(() => {
            if (underWay.get(key) === reading) underWay.delete(key)
          })
        }
        return reading
      })
      gathering.set(key, result)
    }
    return result
  }
}
