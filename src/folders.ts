// Folders the service makes for its files (the SQLite database, the main key file).
import { existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'

/**
 * mkdir -p, one level at a time: Node's recursive mkdirSync never returns for a
 * folder under /proc (DATABASE_URL=sqlite:/proc/nope/x.db hung the start with no
 * output), where a plain mkdirSync fails at once with ENOENT.
 */
export function makeFolders(folder: string): void {
  if (existsSync(folder)) return
  makeFolders(dirname(folder))
  mkdirSync(folder)
}
