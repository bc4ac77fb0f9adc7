// What is asked for in one event-loop turn goes out as one batch. Every request read
// in a turn has queued its item by the time setImmediate fires (it runs after the
// poll phase), so an idle server sends a batch of one without waiting. One batch is
// out at a time: what arrives meanwhile waits and goes together in the next, so the
// busier the store, the larger the batches.
//
// Used by both stores' writes: SQLite's group commit (group-commit.ts) and
// PostgreSQL's multi-row INSERT and reservations (postgres/pets-store.ts, postgres/orders-store.ts).

export interface BatchItem<I, O> {
  input: I
  resolve: (output: O) => void
  reject: (error: unknown) => void
}

/** Sends one batch; settles each of its items (an item it leaves unsettled is rejected with the error `send` throws, if any). */
export type SendBatch<I, O> = (batch: BatchItem<I, O>[]) => Promise<void>

export function createTurnBatcher<I, O>(send: SendBatch<I, O>): (input: I) => Promise<O> {
  let pending: BatchItem<I, O>[] = []
  let sending = false
  let scheduled = false

  const schedule = () => {
    if (scheduled) return
    scheduled = true
    setImmediate(flush)
  }

  function flush() {
    scheduled = false
    if (pending.length === 0 || sending) return
    const batch = pending
    pending = []
    sending = true
    void (async () => {
      try {
        await send(batch)
      } catch (error) {
        // Settling twice is a no-op: only the items `send` left unsettled get the error.
        for (const item of batch) item.reject(error)
      } finally {
        sending = false
        if (pending.length > 0) schedule()
      }
    })()
  }

  return (input) =>
    new Promise<O>((resolve, reject) => {
      pending.push({ input, resolve, reject })
      schedule()
    })
}
