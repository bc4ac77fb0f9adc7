// Deletions that may meet millions of rows (an endpoint's history, the purges of old
// events, expired Idempotency-Keys and old usage) go a batch a statement, with a turn
// of the event loop between: on SQLite a statement holds the one writer, and with it
// every request of every tenant, for as long as it runs (about 5 µs a row); on
// PostgreSQL a transaction holds its locks as long.
import { setImmediate } from 'node:timers/promises'

/** Calls `deleteBatch(limit)`, which deletes at most `limit` rows and answers how many, until it deletes fewer; answers how many in all. */
export async function deleteInBatches(limit: number, deleteBatch: (limit: number) => Promise<number | bigint | undefined>): Promise<number> {
  let deleted = 0
  for (;;) {
    const batch = Number((await deleteBatch(limit)) ?? 0n)
    deleted += batch
    if (batch < limit) return deleted
    await setImmediate()
  }
}

/** Calls `write` on `rows` `size` at a time, in order, one after the other: a statement's parameters are bounded (SQLite 32,766, PostgreSQL 65,535). */
export async function writeInBatches<T>(rows: readonly T[], size: number, write: (batch: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += size) await write(rows.slice(i, i + size))
}
