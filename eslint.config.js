// @ts-check
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import globals from 'globals'

// The layering, locked (no-restricted-imports, by import path): the folders of src/
// are the architecture diagram, routes → plugins → db / rate-limit / api-keys, and
// an import may only point down it. Each folder gets one list (a later block's list
// would replace an earlier one's for the same file, not add to it).

/** Relative imports of these top-level folders or files of src/, from any depth. */
const up = (...names) => new RegExp(`^(\\.\\./)+(${names.join('|')})(/|\\.js$)`).source

const HTTP = { regex: '^(fastify|fastify-plugin|@fastify/.*)$', message: 'No HTTP here: library layers return results; only routes/ and plugins/ speak HTTP.' }
const ABOVE_DB = {
  regex: up('routes', 'plugins', 'cli', 'client', 'idempotency', 'api-keys', 'rate-limit', 'webhooks', 'app', 'server', 'cluster', 'errors'),
  message: 'db/ is the bottom layer: it may import schemas/, config and clock, nothing above it (implement a contract of db/ instead).',
}
const DB_INSIDES = {
  regex: '(^|/)db/(sqlite|postgres|sql|batching|migrations)/|^(kysely|pg|better-sqlite3)$',
  message: 'Outside src/db/, only the contracts at its root (store.ts, *-store.ts, store-errors.ts, open-store.ts, from-config.ts): no backend folder, no SQL, no driver.',
}
const ROUTES_AND_PLUGINS = { regex: up('routes', 'plugins', 'app', 'server', 'cli'), message: 'A library layer may not import the HTTP layer or the process entry.' }

const restrict = (...patterns) => ({ 'no-restricted-imports': ['error', { patterns }] })

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  { files: ['src/db/**/*.ts'], rules: restrict(HTTP, ABOVE_DB) },
  { files: ['src/api-keys/**/*.ts', 'src/rate-limit/**/*.ts', 'src/webhooks/**/*.ts'], rules: restrict(HTTP, ROUTES_AND_PLUGINS, DB_INSIDES) },
  {
    files: ['src/idempotency/**/*.ts', 'src/schemas/**/*.ts', 'src/errors.ts', 'src/clock.ts', 'src/config.ts'],
    rules: restrict(ROUTES_AND_PLUGINS, DB_INSIDES),
  },
  { files: ['src/routes/**/*.ts', 'src/plugins/**/*.ts', 'src/cli/**/*.ts', 'src/app.ts', 'src/server.ts', 'src/cluster.ts'], rules: restrict(DB_INSIDES) },
)
