#!/usr/bin/env node
// The `petstore` command line. `npm install` builds dist/ (the prepare script).
// The Node.js check comes before the CLI's modules load, so an unsupported Node gets
// a sentence rather than whatever a dependency does on it.
import { unsupportedNodeMessage } from '../dist/node-support.js'

const unsupported = unsupportedNodeMessage()
if (unsupported) {
  console.error(`petstore: ${unsupported}`)
  process.exit(1)
}
// `.env` in the working directory, as `npm start` reads it; the environment wins.
const { loadDotEnv } = await import('../dist/config.js')
loadDotEnv()
const { main } = await import('../dist/cli/main.js')
process.exitCode = await main(process.argv.slice(2))
