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
const { main } = await import('../dist/cli/main.js')
process.exitCode = await main(process.argv.slice(2))
