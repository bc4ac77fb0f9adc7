// Group commit: every write asked for in one event-loop turn goes into one
// transaction; each promise resolves only once that transaction has committed, so
// "resolved means durable" holds, at one commit (one WAL write) per group.

export interface GroupCommitOptions<I, O> {
  /** Writes a whole batch in one transaction (synchronously, e.g. better-sqlite3), in order. */
  commit: (batch: I[]) => O[]
  /** Runs `work` when no one else uses the connection (e.g. Kysely's connection lock). */
  exclusive: (work: () => void) => Promise<void>
  /** Whether a failed batch failed because of one bad item, so that each item is worth retrying alone. */
  isItemError: (error: unknown) => boolean
}

interface Pending<I, O> {
  item: I
  resolve: (value: O) => void
  reject: (error: unknown) => void
}

export function createGroupCommit<I, O>({ commit, exclusive, isItemError }: GroupCommitOptions<I, O>): (item: I) => Promise<O> {
  let pending: Pending<I, O>[] = []

  function commitBatch(batch: Pending<I, O>[]) {
    let results: O[]
    try {
      results = commit(batch.map((p) => p.item))
    } catch (error) {
      // One bad item (a constraint) must not fail its neighbours: commit each alone, so
      // only it fails. Anything else (busy, disk full, I/O) fails the whole batch at once:
      // retrying item by item would block the event loop once per item.
      if (batch.length === 1 || !isItemError(error)) throw error
      for (const p of batch) {
        try {
          p.resolve(commit([p.item])[0]!)
        } catch (itemError) {
          p.reject(itemError)
        }
      }
      return
    }
    batch.forEach((p, i) => p.resolve(results[i]!))
  }

  async function flush() {
    const batch = pending
    pending = []
    try {
      await exclusive(() => commitBatch(batch))
    } catch (error) {
      for (const p of batch) p.reject(error)
    }
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      pending.push({ item, resolve, reject })
      // setImmediate runs after the poll phase: every request read in this turn has queued its write by then.
      if (pending.length === 1) setImmediate(() => void flush())
    })
}
