// `petstore <command>`: the command line, reading the same environment as the server.
// Every command that touches the store applies pending migrations first; `pets`,
// `orders` and `inventory` are clients of a running service and touch no store.
import { readFileSync } from 'node:fs'
import { loadConfig, redactUrl } from '../config.js'
import { accountsCommands } from './accounts.js'
import { keysCommands } from './keys.js'
import { DEFAULT_URL, petsCommands } from './pets.js'
import { ordersCommands } from './orders.js'
import { categoriesCommands } from './categories.js'
import { eventsCommands, webhooksCommands } from './webhooks.js'
import { usageCommands } from './usage.js'
import { CliError } from './cli-error.js'
import { closest } from '../closest.js'
import { defineCommand, findCommand, type Command } from './command.js'
import { consoleIo, type Io } from './io.js'
import { PLAN_LIMITS } from '../vocabulary/plans.js'
import { migratingMessage } from '../db/database.js'
import { openStoreFromConfig } from '../db/from-config.js'

const serverCommands = [
  defineCommand({
    name: 'serve',
    summary: 'Start the server (HOST, PORT, DATABASE_URL, REDIS_URL…: see .env.example)',
    run: async (_input, context) => {
      const { serve } = await import('../server.js')
      await serve(loadConfig(context.env))
      return 0
    },
  }),
  defineCommand({
    name: 'dispatch',
    summary: 'Deliver webhooks in a process of its own (run the servers with PETSTORE_DISPATCH=off)',
    run: async (_input, context) => {
      const { runDispatch } = await import('../dispatch.js')
      await runDispatch(loadConfig(context.env))
      return 0
    },
  }),
  defineCommand({
    name: 'migrate',
    summary: 'Apply pending schema migrations to the DATABASE_URL store',
    run: async (_input, context) => {
      const config = loadConfig(context.env)
      // What this process applied: another instance may have applied what was pending while it waited for the lock.
      let applied: readonly string[] = []
      const store = await openStoreFromConfig(config, {
        migrations: {
          onPending: (names) => context.io.err(`petstore: ${migratingMessage(names)}`),
          onApplied: (names) => (applied = names),
        },
      })
      await store.close()
      const where = redactUrl(config.databaseUrl)
      context.io.out(applied.length === 0 ? `migrations are up to date (${where})` : `applied ${applied.length} migration${applied.length === 1 ? '' : 's'} to ${where}: ${applied.join(', ')}`)
      return 0
    },
  }),
]

const COMMANDS: readonly Command[] = [...serverCommands, ...accountsCommands, ...keysCommands, ...petsCommands, ...categoriesCommands, ...ordersCommands, ...webhooksCommands, ...eventsCommands, ...usageCommands]
const GROUPS = ['accounts', 'keys', 'pets', 'categories', 'orders', 'webhooks', 'events', 'usage']

function listing(commands: readonly Command[]): string[] {
  const width = Math.max(...commands.map((command) => command.name.length)) + 3
  return commands.map((command) => `  ${command.name.padEnd(width)}${command.summary}`)
}

const USAGE = [
  'Usage: petstore <command> [arguments]   (petstore <command> --help: its arguments; --version)',
  '',
  'Commands:',
  ...listing(COMMANDS),
  '',
  `Plans: ${Object.entries(PLAN_LIMITS)
    .map(([plan, { perMinute, perDay }]) => `${plan} (${perMinute}/min, ${perDay}/day)`)
    .join(', ')}, enterprise (--per-minute and --per-day set per account). All keys of an account share its limits.`,
  '',
  'serve, migrate, accounts and keys use the store DATABASE_URL names (default: data/petstore.db in this project).',
  `pets, categories, orders, inventory, webhooks, events and usage talk to a running service: PETSTORE_URL (default ${DEFAULT_URL})`,
  'and PETSTORE_API_KEY.',
].join('\n')

const HELP = new Set(['--help', '-h', 'help'])
const VERSION = new Set(['--version', '-V', 'version'])

/** The package's version, from the package.json beside src/ and dist/. */
function version(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
}

/** Runs one command; returns the process exit code: 0, 1 for a failure the command met, 2 for a mistake in its arguments. */
export async function main(argv: string[], io: Io = consoleIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  try {
    const [name, ...rest] = argv
    // Bad arguments are one line on stderr and a non-zero exit; the usage is printed when asked for.
    if (name === undefined) {
      io.err('petstore: no command given; run "petstore --help" for the list')
      return 2
    }
    if (HELP.has(name)) {
      io.out(USAGE)
      return 0
    }
    if (VERSION.has(name)) {
      io.out(version())
      return 0
    }
    const context = { env, io }
    if (GROUPS.includes(name)) {
      const [sub, ...args] = rest
      if (sub !== undefined && HELP.has(sub)) {
        io.out([`Usage: petstore ${name} <command> [arguments]   (petstore ${name} <command> --help: its arguments)`, '', 'Commands:', ...listing(COMMANDS.filter((command) => command.name.startsWith(`${name} `)))].join('\n'))
        return 0
      }
      return await findCommand(COMMANDS, name, sub).execute(args, context)
    }
    const command = COMMANDS.find((candidate) => candidate.name === name)
    if (command === undefined) {
      const guess = closest(name, [...GROUPS, ...COMMANDS.map((candidate) => candidate.name).filter((candidate) => !candidate.includes(' '))])
      throw new CliError(`unknown command "${name}"${guess ? ` (did you mean ${guess}?)` : ''}; run "petstore --help" for the list`)
    }
    return await command.execute(rest, context)
  } catch (error) {
    io.err(`petstore: ${describe(error)}`)
    return error instanceof CliError ? 2 : 1
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message.split('\n')[0] ?? error.name
  return String(error)
}
