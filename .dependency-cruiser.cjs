// The layers of src/, as docs/architecture.md draws them, checked by `npm run deps`
// (part of `npm test`): no import cycle, and every import points down this list.
//
//   entries   server.ts cluster.ts dispatch.ts reseal-secrets.ts cli/
//   HTTP      app.ts plugins/ routes/
//   rooms     api-keys/ catalogue/ orders/ usage/ webhooks/   (no room imports another)
//   helpers   rate-limit/ idempotency/ secrets/
//   store     db/
//   schemas   schemas/
//   floor     vocabulary/ config.ts logging.ts clock.ts errors.ts closest.ts node-support.ts folders.ts
//
// client/ stands apart: it takes types from schemas/ and errors.ts, and only cli/ uses it
// within src/. console/src/ (the web console, for the browser) uses the client, the words
// of vocabulary/, and types alone of schemas/ and errors.ts.
const FLOOR = 'src/(vocabulary/|config\\.ts|logging\\.ts|clock\\.ts|errors\\.ts|closest\\.ts|node-support\\.ts|folders\\.ts)'
const SCHEMAS = `${FLOOR}|src/schemas/`
const STORE = `${SCHEMAS}|src/db/`
const HELPERS = `${STORE}|src/(rate-limit|idempotency|secrets)/`
const ROOMS = ['api-keys', 'catalogue', 'orders', 'usage', 'webhooks']
const HTTP = `${HELPERS}|src/(${ROOMS.join('|')})/|src/(app\\.ts|plugins/|routes/)`

/** Imports from `from` may reach only what `allowed` matches (within src/). */
const layer = (name, from, allowed) => ({
  name,
  severity: 'error',
  comment: `${from} imports only from the layers below it (${allowed})`,
  from: { path: `^(${from})` },
  to: { path: '^src/', pathNot: `^(${allowed})` },
})

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'An import cycle: one of its modules belongs below the others.', from: {}, to: { circular: true } },
    layer('floor', FLOOR, FLOOR),
    layer('schemas', 'src/schemas/', SCHEMAS),
    layer('store', 'src/db/', STORE),
    layer('helpers', 'src/(rate-limit|idempotency|secrets)/', HELPERS),
    ...ROOMS.map((room) => layer(`room-${room}`, `src/${room}/`, `${HELPERS}|src/${room}/`)),
    layer('http', 'src/(app\\.ts|plugins/|routes/)', HTTP),
    layer('client', 'src/client/', 'src/(client/|schemas/|vocabulary/|errors\\.ts)'),
    {
      name: 'client-for-the-cli-only',
      severity: 'error',
      comment: 'The typed client is for other programs and the CLI; the service never calls itself over HTTP.',
      from: { path: '^src/', pathNot: '^src/(client|cli)/' },
      to: { path: '^src/client/' },
    },
    {
      name: 'console-through-the-client',
      severity: 'error',
      comment: 'The console reaches the API through src/client/ only: no server code in the browser bundle.',
      from: { path: '^console/' },
      to: { path: '^src/', pathNot: '^src/(client/|vocabulary/|schemas/|errors\\.ts)' },
    },
    {
      name: 'console-takes-types-only',
      severity: 'error',
      comment: 'Of schemas/ and errors.ts the console takes types (erased at build), not their run-time values.',
      from: { path: '^console/' },
      to: { path: '^src/(schemas/|errors\\.ts)', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
}
