// Group commit: every write asked for in one event-loop turn (turn-batcher.ts) goes
// into one transaction; each promise resolves only once that transaction has committed, so
// "resolved means durable" holds, at one commit (one WAL write) per group.
//
// A write is any synchronous operation (better-sqlite3: prepared statements), run in
// arrival order, each in a SAVEPOINT of its own: an operation that throws (a
// constraint, e.g. orders_one_open_per_pet) rolls back only its own statements and
// rejects only its own promise; its neighbours still commit.
//
// Writes of one kind (creates, reservations) can go in together (`together`): all
// those asked for before the group reaches the first of them run as one operation, in
// a few set-based statements (a multi-row INSERT, an UPDATE … WHERE id IN), for the
// cost of a statement is mostly its own, not its rows': a trigger's work runs in the
// statement's savepoint, and FTS5 writes out what it holds at each one
// (docs/benchmarks.md). When any of them fails, they are all undone and run one by
// one, each in a savepoint of its own, so that only that one fails, as above.

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

export interface GroupCommit {
  /** Runs `operation` in the next group, in a savepoint of its own; resolves once the group has committed. */
  <O>(operation: () => O): Promise<O>
  /**
   * Writes of one kind that go in together: `all` writes every input given before the
   * group reaches them, in order, and answers each one's outcome; it throws to say
   * that one of them failed, and then `one` writes each alone.
   */
  together<I, O>(writes: { all: (inputs: readonly I[]) => O[]; one: (input: I) => O }): (input: I) => Promise<O>
}

type Outcome<O = unknown> = { ok: true; value: O } | { ok: false; error: unknown }

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
  const groupCommit = <O>(operation: () => O) => submit(operation) as Promise<O>

  function together<I, O>({ all, one }: { all: (inputs: readonly I[]) => O[]; one: (input: I) => O }) {
    /** Alone, in a savepoint of its own: its failure is its own outcome. */
    const alone = (input: I): Outcome<O> => {
      try {
        return { ok: true, value: savepoint(() => one(input)) }
      } catch (error) {
        if (!inTransaction()) throw error
        return { ok: false, error }
      }
    }
    const writeAll = (inputs: readonly I[]): Outcome<O>[] => {
      try {
        return savepoint(() => all(inputs)).map((value) => ({ ok: true, value }))
      } catch (error) {
        // An error that ended the transaction itself (SQLITE_FULL …) fails the whole group.
        if (!inTransaction()) throw error
        return inputs.map(alone)
      }
    }
    // The inputs not yet written, with their callers: the operation takes them all when it runs.
    let waiting: { inputs: I[]; settle: Array<(outcome: Outcome<O>) => void> } | undefined
    return (input: I) =>
      new Promise<O>((resolve, reject) => {
        const settle = (outcome: Outcome<O>) => (outcome.ok ? resolve(outcome.value) : reject(outcome.error))
        if (waiting) {
          waiting.inputs.push(input)
          waiting.settle.push(settle)
          return
        }
        const these = (waiting = { inputs: [input], settle: [settle] })
        groupCommit(() => {
          waiting = undefined
          return writeAll(these.inputs)
        }).then(
          // Only after COMMIT: a resolved write is durable.
          (outcomes) => these.settle.forEach((settleOne, i) => settleOne(outcomes[i]!)),
          (error: unknown) => these.settle.forEach((settleOne) => settleOne({ ok: false, error })),
        )
      })
  }
  return Object.assign(groupCommit, { together })
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
