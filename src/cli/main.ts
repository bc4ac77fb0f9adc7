// `petstore <command>`: the command line, reading the same environment as the server.
// Every command that touches the store applies pending migrations first; `pets` is
// a client of a running service and touches no store.
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { loadConfig, type Config } from '../config.js'
import { keysCommand } from './keys.js'
import { DEFAULT_URL, petsCommand } from './pets.js'
import { inventoryCommand, ordersCommand } from './orders.js'
import { CliError } from './cli-error.js'
import { consoleIo, type Io } from './io.js'
import { PLAN_LIMITS } from '../api-keys/plans.js'
import { openStoreFromConfig } from '../db/from-config.js'

const USAGE = `Usage: petstore <command>   (petstore <command> --help: that command alone; --version)

Commands:
  serve                                      start the server (HOST, PORT, DATABASE_URL, …)
  migrate                                    apply pending schema migrations
  keys create --plan PLAN [--name NAME] [--per-minute N --per-day N] [--json]
                                             create an API key; prints the key alone on the first line
  keys list [--json]                         list keys (never their secrets)
  keys revoke ID                             revoke a key (takes effect within 5 seconds)
  keys set-plan ID PLAN [--per-minute N --per-day N]
                                             change a key's plan
  pets list [--status S] [--limit N] [--cursor C] [--all]
                                             list pets as JSON (a next page's cursor on stderr; --all: every page)
  pets create --name NAME --category-id N [--status S] [--idempotency-key K]
                                             add a pet; prints it as JSON
  pets get ID                                print one pet (deprecated by the API: removed 5 Dec 2030)
  pets update ID [--name NAME] [--category-id N] [--status S] [--if-match ETAG]
                                             change a pet's fields; prints it as JSON, its ETag on stderr
  pets delete ID [--if-match ETAG]           delete a pet no open order holds
  orders place --pet-id N [--idempotency-key K]
                                             reserve an available pet; prints the order as JSON
  orders list [--status S] [--limit N] [--cursor C] [--all]
                                             list this key's orders as JSON
  orders get ID | complete ID | cancel ID    print, complete (pet sold) or cancel (pet available) an order
  inventory                                  print the number of pets in each status

Plans: ${Object.entries(PLAN_LIMITS)
  .map(([plan, { perMinute, perDay }]) => `${plan} (${perMinute}/min, ${perDay}/day)`)
  .join(', ')}, enterprise (--per-minute and --per-day set per key).

The pets, orders and inventory commands talk to a running service: PETSTORE_URL
(default ${DEFAULT_URL}) and PETSTORE_API_KEY. They need no DATABASE_URL.`

const HELP = new Set(['--help', '-h', 'help'])
const VERSION = new Set(['--version', '-V', 'version'])

/** The usage lines of one command (`petstore keys --help`), or all of them. */
function usageOf(command: string): string {
  const lines = USAGE.split('\n')
  const first = lines.findIndex((line) => line.startsWith(`  ${command}`))
  if (first === -1) return USAGE
  const own: string[] = []
  for (const line of lines.slice(first)) {
    // A command's line, and the indented line that continues it.
    if (line.startsWith(`  ${command}`) || (own.length > 0 && /^ {20,}\S/.test(line))) own.push(line)
    else if (line.startsWith('  ') || line === '') break
  }
  return ['Usage: petstore <command>', '', ...own].join('\n')
}

/** The package's version, from the package.json beside src/ and dist/. */
function version(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
}

/** Runs one command; returns the process exit code. */
export async function main(argv: string[], io: Io = consoleIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  try {
    const [command, ...rest] = argv
    // Decision D9: bad arguments are one line on stderr and a non-zero exit; the usage is asked for.
    if (command === undefined) {
      io.err('petstore: no command given; run "petstore --help" for the list')
      return 2
    }
    if (HELP.has(command)) {
      io.out(USAGE)
      return 0
    }
    if (VERSION.has(command)) {
      io.out(version())
      return 0
    }
    // `petstore keys --help`, `petstore pets list -h`: help, wherever it is asked for.
    if (rest.some((arg) => arg === '--help' || arg === '-h')) {
      io.out(usageOf(command))
      return 0
    }
    // Before loadConfig: a client of the service must not fail on the server's settings.
    if (command === 'pets') return await petsCommand(rest, env, io)
    if (command === 'orders') return await ordersCommand(rest, env, io)
    if (command === 'inventory') return await inventoryCommand(rest, env, io)
    const config = loadConfig(env)
    switch (command) {
      case 'serve': {
        parseArgs({ args: rest, options: {} })
        const { serve } = await import('../server.js')
        await serve(config)
        return 0
      }
      case 'migrate':
        parseArgs({ args: rest, options: {} })
        return await migrateCommand(config, io)
      case 'keys':
        return await keysCommand(rest, config, io)
      default:
        throw new CliError(`unknown command "${command}"; run "petstore help"`)
    }
  } catch (error) {
    io.err(`petstore: ${describe(error)}`)
    return error instanceof CliError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? 2 : 1
  }
}

async function migrateCommand(config: Config, io: Io): Promise<number> {
  const store = await openStoreFromConfig(config)
  await store.close()
  io.out(`migrations are up to date (${store.dialect})`)
  return 0
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message.split('\n')[0] ?? error.name
  return String(error)
}
