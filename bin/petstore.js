#!/usr/bin/env node
// The `petstore` command line. `npm install` builds dist/ (the prepare script).
import { main } from '../dist/cli/main.js'

process.exitCode = await main(process.argv.slice(2))
