// Identical reads asked for in one event-loop turn run once, and everyone who asked
// gets that one result. It is not a cache: the read is sent to the database only
// after the turn in which all of its callers arrived, so it sees every commit that
// any of them could have known about (the database takes its snapshot when the
// statement starts). A caller arriving once the read is on its way waits for a
// read of its own. Used where freshness cannot be proven otherwise (PostgreSQL,
// written by other instances), and for the SQLite page cache's version check.

/** `key` must name the read completely: callers that join a read get its result, whatever their own `read` was. */
export type Coalesced<T> = (key: string, read: () => Promise<T>) => Promise<T>

export function createReadCoalescer<T>(): Coalesced<T> {
  const gathering = new Map<string, Promise<T>>()
  return (key, read) => {
    let result = gathering.get(key)
    if (!result) {
      result = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        // From here on, callers with this key start a new read: this one may already be running.
        gathering.delete(key)
        return read()
      })
      gathering.set(key, result)
    }
    return result
  }
}
