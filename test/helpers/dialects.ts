// Every backend the store has, each with a fresh database of its own: the list the
// store's contract tests loop over, the way kysely loops its tests over DIALECTS. A
// third backend is a folder in src/db/ and a line here.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Dialect } from '../../src/db/dialect.js'
import { createTestDatabase } from './services.js'

export interface TestDatabase {
  url: string
  drop(): Promise<void>
}

export const DIALECTS: { dialect: Dialect; create(): Promise<TestDatabase> }[] = [
  {
    dialect: 'sqlite',
    async create() {
      const dir = mkdtempSync(join(tmpdir(), 'petstore-contract-'))
      return { url: `sqlite:${join(dir, 'petstore.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) }
    },
  },
  { dialect: 'postgres', create: createTestDatabase },
]
