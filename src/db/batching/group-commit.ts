// Group commit: every write asked for in one event-loop turn (turn-batcher.ts) goes
// into one transaction; each promise resolves only once that transaction has committed, so
// "resolved means durable" holds, at one commit (one WAL write) per group.
//
// A write is any synchronous operation (better-sqlite3: prepared statements), run in
// arrival order, each in a SAVEPOINT of its own: an operation that throws (a
// constraint, e.g. orders_one_open_per_pet) rolls back only its own statements and
// rejects only its own promise; its neighbours still commit.

import type SqliteDatabase from 'better-sqlite3'
import { withoutBusyWait } from '../sqlite/lock-wait.js'
import type { Kysely } from 'kysely'
import type { Database } from '../schema.js'
import { createTurnBatcher, type BatchItem } from './turn-batcher.js'

export interface GroupCommitOptions {
  /** Runs `work` (synchronous) in one transaction; rejects if it did not commit. */
  transaction: (work: () => void) => Promise<void>
  /** Inside the transaction: runs `operation` in a savepoint, rolled back alone when it throws. */
  savepoint: <O>(operation: () => O) => O
  /** Whether the transaction is still open: some errors (SQLITE_FULL, SQLITE_IOERR…) end it, and with it the whole batch. */
  inTransaction: () => boolean
  /** Runs `work` when no one else uses the connection (e.g. Kysely's connection lock). */
  exclusive: (work: () => Promise<void>) => Promise<void>
}

export type GroupCommit = <O>(operation: () => O) => Promise<O>

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

export function createGroupCommit({ transaction, savepoint, inTransaction, exclusive }: GroupCommitOptions): GroupCommit {
  async function commitBatch(batch: BatchItem<() => unknown, unknown>[]) {
    const outcomes: Outcome[] = []
    await transaction(() => {
      for (const { input: operation } of batch) {
        try {
          outcomes.push({ ok: true, value: savepoint(operation) })
        } catch (error) {
          // The transaction itself is gone: later operations would run outside it
          // (autocommit), so fail the whole batch instead.
          if (!inTransaction()) throw error
          outcomes.push({ ok: false, error })
        }
      }
    })
    // Only now, after COMMIT, does anyone hear back: a resolved promise means durable.
    batch.forEach((item, i) => {
      const outcome = outcomes[i]!
      if (outcome.ok) item.resolve(outcome.value)
      else item.reject(outcome.error)
    })
  }

  // A failed transaction rejects every operation of its batch (turn-batcher.ts).
  const submit = createTurnBatcher<() => unknown, unknown>((batch) => exclusive(() => commitBatch(batch)))
  return <O>(operation: () => O) => submit(operation) as Promise<O>
}

/**
 * The group commit of `writer`, the better-sqlite3 connection Kysely (`db`) runs on.
 * Each group runs under Kysely's connection lock, so that it never lands between the
 * statements of anything else run through Kysely on that connection (the
 * Idempotency-Key claims, the API keys, migrations). The lock, not the connection
 * object: the prepared statements run on the same connection.
 */
export function createSqliteGroupCommit(db: Kysely<Database>, writer: SqliteDatabase.Database): GroupCommit {
  const begin = beginImmediate(writer)
  const commit = writer.prepare('COMMIT')
  const rollback = writer.prepare('ROLLBACK')
  // Called inside a transaction, a better-sqlite3 transaction function uses a SAVEPOINT
  // and rolls back to it when the function throws.
  const inSavepoint = writer.transaction((operation: () => unknown) => operation())
  async function inOneTransaction(work: () => void): Promise<void> {
    await begin()
    try {
      work()
      commit.run()
    } catch (error) {
      if (writer.inTransaction) rollback.run()
      throw error
    }
  }
  return createGroupCommit({
    transaction: inOneTransaction,
    savepoint: <O>(operation: () => O) => inSavepoint(operation) as O,
    inTransaction: () => writer.inTransaction,
    exclusive: (work) => db.connection().execute(work),
  })
}

/**
 * BEGIN IMMEDIATE: takes the write lock up front, so that two processes never both
 * read, then both try to upgrade (which SQLite answers with SQLITE_BUSY at once). When
 * another process holds it (the CLI, `petstore dispatch`), the wait is asynchronous
 * (sqlite/lock-wait.ts), letting the server's requests go on, their writes joining the
 * next, larger batch.
 */
function beginImmediate(writer: SqliteDatabase.Database): () => Promise<void> {
  const begin = writer.prepare('BEGIN IMMEDIATE')
  return () =>
    withoutBusyWait(writer, () => {
      begin.run()
    })
}
