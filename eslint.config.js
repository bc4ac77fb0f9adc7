// @ts-check
import js from '@eslint/js'
import tseslint from 'typescript-eslint'
import globals from 'globals'

// The layering, locked (no-restricted-imports, by import path): the folders of src/
// are the architecture diagram (docs/architecture.md), entries → HTTP → rooms
// (api-keys, catalogue, orders, usage, webhooks) → rate-limit / idempotency / secrets → db → schemas → vocabulary,
// and an import may only point down it. `npm run deps` (dependency-cruiser) checks the
// whole graph, cycles included; these rules say it in the editor. Each folder gets one
// list (a later block's list would replace an earlier one's for the same file, not add
// to it).

/** Relative imports of these top-level folders or files of src/, from any depth. */
const up = (...names) => new RegExp(`^(\\.\\./)+(${names.join('|')})(/|\\.js$)`).source

const HTTP = { regex: '^(fastify|fastify-plugin|@fastify/.*)$', message: 'No HTTP here: library layers return results; only routes/ and plugins/ speak HTTP.' }
const ABOVE_DB = {
  regex: up('routes', 'plugins', 'cli', 'client', 'idempotency', 'secrets', 'api-keys', 'rate-limit', 'webhooks', 'usage', 'orders', 'catalogue', 'app', 'server', 'cluster', 'errors'),
  message: 'db/ is the bottom layer: it may import schemas/, config and clock, nothing above it (implement a contract of db/ instead).',
}
const DB_INSIDES = {
  regex: '(^|/)db/(sqlite|postgres|sql|batching|migrations)/|^(kysely|pg|better-sqlite3)$',
  message: 'Outside src/db/, only the contracts at its root (store.ts, *-store.ts, store-errors.ts, open-store.ts, from-config.ts): no backend folder, no SQL, no driver.',
}
const ROUTES_AND_PLUGINS = { regex: up('routes', 'plugins', 'app', 'server', 'cli'), message: 'A library layer may not import the HTTP layer or the process entry.' }
const ABOVE_SCHEMAS = {
  regex: up('db', 'api-keys', 'rate-limit', 'webhooks', 'usage', 'orders', 'catalogue', 'idempotency', 'secrets'),
  message: 'schemas/ sits below the store and the services: the words they share (plans, scopes, event types, usage outcomes) are in vocabulary/.',
}
const ABOVE_VOCABULARY = { regex: '^\\.\\./', message: 'vocabulary/ is the floor: plain names and values that every layer shares, importing nothing of src/.' }
const OTHER_ROOMS = (room) => ({
  regex: up(...['api-keys', 'catalogue', 'orders', 'usage', 'webhooks'].filter((other) => other !== room)),
  message: 'A room (api-keys, catalogue, orders, usage, webhooks) does not reach into another: the HTTP layer or an entry wires them together.',
})
const ROOMS_FROM_HELPERS = { regex: up('api-keys', 'catalogue', 'orders', 'usage', 'webhooks'), message: 'rate-limit/, idempotency/ and secrets/ sit below the rooms that use them.' }

const restrict = (...patterns) => ({ 'no-restricted-imports': ['error', { patterns }] })

// console/ (the web console, bundled for the browser by Vite) reaches the API through
// the typed client only: of src/ it may take client/, the shared words of vocabulary/,
// and the types (nothing at run time) of schemas/ and errors.ts.
const CONSOLE_IMPORTS = {
  patterns: [
    { regex: '^(\\.\\./)+src/(?!client/|vocabulary/|schemas/|errors\\.js$)', message: 'The console talks to the API through src/client/ (petstore/client): no server code in the browser.' },
    { regex: '^(\\.\\./)+src/(schemas/|errors\\.js$)', allowTypeImports: true, message: 'Only types of schemas/ and errors.ts: their values (TypeBox) are the server\'s.' },
  ],
}

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
  ...['api-keys', 'catalogue', 'orders', 'usage', 'webhooks'].map((room) => ({ files: [`src/${room}/**/*.ts`], rules: restrict(HTTP, ROUTES_AND_PLUGINS, DB_INSIDES, OTHER_ROOMS(room)) })),
  { files: ['src/rate-limit/**/*.ts', 'src/secrets/**/*.ts'], rules: restrict(HTTP, ROUTES_AND_PLUGINS, DB_INSIDES, ROOMS_FROM_HELPERS) },
  { files: ['src/idempotency/**/*.ts', 'src/errors.ts', 'src/clock.ts', 'src/config.ts'], rules: restrict(ROUTES_AND_PLUGINS, DB_INSIDES, ROOMS_FROM_HELPERS) },
  { files: ['src/schemas/**/*.ts'], rules: restrict(HTTP, ROUTES_AND_PLUGINS, ABOVE_SCHEMAS) },
  { files: ['src/vocabulary/**/*.ts'], rules: restrict(HTTP, ABOVE_VOCABULARY) },
  { files: ['src/routes/**/*.ts', 'src/plugins/**/*.ts', 'src/cli/**/*.ts', 'src/app.ts', 'src/server.ts', 'src/cluster.ts'], rules: restrict(DB_INSIDES) },
  {
    files: ['console/src/**/*.{ts,tsx}'],
    languageOptions: { globals: globals.browser },
    rules: { '@typescript-eslint/no-restricted-imports': ['error', CONSOLE_IMPORTS] },
  },
)
