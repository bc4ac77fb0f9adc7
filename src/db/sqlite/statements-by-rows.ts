// Set-based writes on SQLite (the group commit's `together`): one statement for many
// rows, prepared once for each number of rows.
import type SqliteDatabase from 'better-sqlite3'

/** Rows in one statement at most: a few values a row, far below SQLite's limit on bound values. */
const MAX_ROWS_PER_STATEMENT = 64

/** `rows` copies of `row`, comma-separated: the VALUES or the IN list of a statement. */
export const marks = (rows: number, row: string) => Array.from({ length: rows }, () => row).join(', ')

/** `items` in runs of at most MAX_ROWS_PER_STATEMENT. */
export function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = []
  for (let from = 0; from < items.length; from += MAX_ROWS_PER_STATEMENT) out.push(items.slice(from, from + MAX_ROWS_PER_STATEMENT))
  return out
}

/** The statement `text(rows)` for a number of rows, prepared the first time it is asked for. */
export function statementsByRows(writer: SqliteDatabase.Database, text: (rows: number) => string, pluck = false): (rows: number) => SqliteDatabase.Statement {
  const statements = new Map<number, SqliteDatabase.Statement>()
  return (rows) => {
    let statement = statements.get(rows)
    if (!statement) {
      statement = writer.prepare(text(rows))
      if (pluck) statement.pluck()
      statements.set(rows, statement)
    }
    return statement
  }
}
