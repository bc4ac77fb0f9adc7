// Rows as the database holds them, read past the store's repositories (which map
// rows to API objects and may drop columns), over a connection of the test's own.
import SqliteDatabase from 'better-sqlite3'
import pg from 'pg'

/** Every row of `table` at `databaseUrl` (a DATABASE_URL: sqlite:… or postgres://…). */
export async function rawRows(databaseUrl: string, table: string): Promise<Record<string, unknown>[]> {
  if (!/^[a-z_]+$/.test(table)) throw new Error(`not a table name: ${table}`)
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new SqliteDatabase(databaseUrl.slice('sqlite:'.length), { readonly: true })
    try {
      return db.prepare(`SELECT * FROM ${table}`).all() as Record<string, unknown>[]
    } finally {
      db.close()
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    return (await client.query<Record<string, unknown>>(`SELECT * FROM ${table}`)).rows
  } finally {
    await client.end()
  }
}
