// Kysely's SQLite driver prepares every statement it runs, at every call: for the
// dispatcher's claims and records (CTEs of a few hundred tokens) preparing took as long
// as running them, a quarter of its CPU. Here each text is prepared once and reused
// while it is among the most recent STATEMENTS_KEPT texts; the statements that differ
// by their number of rows (an IN list, a VALUES list) are a few dozen texts each.
import type SqliteDatabase from 'better-sqlite3'
import type { SqliteDatabase as KyselySqliteDatabase } from 'kysely'

/** Texts kept prepared at most: the service's Kysely statements, every row count of the set-based ones included, are fewer. */
const STATEMENTS_KEPT = 512

/** `writer` as Kysely's SQLite dialect sees it, with its statements prepared once per text. */
export function withStatementCache(writer: SqliteDatabase.Database): KyselySqliteDatabase {
  const prepared = new Map<string, SqliteDatabase.Statement>()
  return {
    close: () => writer.close(),
    prepare(text) {
      const statement = prepared.get(text)
      // A statement being iterated (a stream) cannot run again until it is done: one of its own meanwhile.
      if (statement !== undefined && !statement.busy) return statement
      const fresh = writer.prepare(text)
      if (statement === undefined) {
        if (prepared.size >= STATEMENTS_KEPT) prepared.delete(prepared.keys().next().value!)
        prepared.set(text, fresh)
      }
      return fresh
    },
  }
}
