// One declaration per command: its arguments, flags and one-line summary. Its --help,
// its line in `petstore --help`, its parsing and the messages for its mistakes all come
// from that declaration, so they cannot disagree.
import { closest } from '../closest.js'
import { parseArgs } from 'node:util'
import { CliError } from './cli-error.js'
import type { Io } from './io.js'

export interface Flag {
  /** The value's placeholder in the usage (`N`, `PLAN`); a flag without one is a switch. */
  readonly value?: string
  readonly description: string
  readonly required?: boolean
}

export type Flags = Readonly<Record<string, Flag>>

/** A flag's parsed value: a string for a flag with a value (always there when required), a boolean for a switch. */
export type FlagValues<F extends Flags> = {
  [K in keyof F]: F[K] extends { value: string } ? (F[K] extends { required: true } ? string : string | undefined) : boolean
}

export interface Context {
  readonly env: Readonly<Record<string, string | undefined>>
  readonly io: Io
}

export interface CommandSpec<F extends Flags, A extends readonly string[]> {
  /** `keys create` */
  readonly name: string
  /** The positional arguments, each required: `['ID', 'PLAN']`. */
  readonly args?: A
  readonly summary: string
  readonly flags?: F
  run(input: { values: FlagValues<F>; args: { [I in keyof A]: string } }, context: Context): Promise<number>
}

/** A command with its types erased, as the table of commands holds it. */
export interface Command {
  readonly name: string
  readonly summary: string
  readonly synopsis: string
  readonly help: string
  execute(argv: string[], context: Context): Promise<number>
}

export function defineCommand<const F extends Flags = Record<never, Flag>, const A extends readonly string[] = []>(spec: CommandSpec<F, A>): Command {
  const flags: Flags = spec.flags ?? {}
  const args: readonly string[] = spec.args ?? []
  const synopsis = [
    ...args,
    ...Object.entries(flags).map(([name, flag]) => {
      const text = flag.value ? `--${name} ${flag.value}` : `--${name}`
      return flag.required ? text : `[${text}]`
    }),
  ].join(' ')
  const usage = `usage: petstore ${spec.name}${synopsis ? ` ${synopsis}` : ''}`
  const rows: [string, string][] = [
    ...Object.entries(flags).map(([name, flag]): [string, string] => [
      `--${name}${flag.value ? ` ${flag.value}` : ''}`,
      `${flag.description}${flag.required ? ' (required)' : ''}`,
    ]),
    ['-h, --help', 'print this help'],
  ]
  const width = Math.max(...rows.map(([left]) => left.length)) + 2
  const help = [`Usage: petstore ${spec.name}${synopsis ? ` ${synopsis}` : ''}`, '', `${spec.summary}.`, '', 'Options:', ...rows.map(([left, right]) => `  ${left.padEnd(width)}${right}`)].join('\n')

  return {
    name: spec.name,
    summary: spec.summary,
    synopsis,
    help,
    async execute(argv, context) {
      if (argv.includes('--help') || argv.includes('-h')) {
        context.io.out(help)
        return 0
      }
      const { values, positionals } = parse(argv, flags, usage)
      for (const [name, flag] of Object.entries(flags)) {
        if (flag.required && values[name] === undefined) throw new CliError(`--${name} is required; ${usage}`)
      }
      if (positionals.length < args.length) throw new CliError(`missing ${args.slice(positionals.length).join(' ')}; ${usage}`)
      if (positionals.length > args.length) throw new CliError(`unexpected argument "${positionals[args.length]}"; ${usage}`)
      for (const [name, flag] of Object.entries(flags)) {
        // A switch absent from the command line is false, not undefined.
        if (!flag.value) values[name] ??= false
      }
      // The casts restate what the checks above established: the required flags and arguments are there.
      return spec.run({ values: values as FlagValues<F>, args: positionals as unknown as { [I in keyof A]: string } }, context)
    },
  }
}

function parse(argv: string[], flags: Flags, usage: string): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  const options = Object.fromEntries(Object.entries(flags).map(([name, flag]) => [name, { type: flag.value ? ('string' as const) : ('boolean' as const) }]))
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true })
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    const unknown = /^Unknown option '([^']+)'/.exec(message)?.[1]
    if (unknown !== undefined) {
      const guess = closest(unknown.replace(/^-+/, '').split('=')[0] ?? '', Object.keys(flags))
      throw new CliError(`unknown option '${unknown}'${guess ? ` (did you mean --${guess}?)` : ''}; ${usage}`)
    }
    const missingValue = /^Option '(?:-\w, )?--([\w-]+) <value>' argument missing/.exec(message)?.[1]
    if (missingValue !== undefined) throw new CliError(`--${missingValue} needs a value (${flags[missingValue]?.value ?? 'VALUE'}); ${usage}`)
    const switchValue = /^Option '--([\w-]+)' does not take an argument/.exec(message)?.[1]
    if (switchValue !== undefined) throw new CliError(`--${switchValue} takes no value; ${usage}`)
    // A value starting with a dash reads as another option: parseArgs wants it after '='.
    const dashValue = /^Option '(?:-\w, )?--([\w-]+)' argument is ambiguous/.exec(message)?.[1]
    if (dashValue !== undefined) throw new CliError(`--${dashValue}'s value starts with a dash, which reads as an option: write it joined, --${dashValue}=<value>; ${usage}`)
    throw new CliError(`${message.split('\n')[0]}; ${usage}`)
  }
}

/** Finds `group sub` in a table of commands, or says what was meant. */
export function findCommand(commands: readonly Command[], group: string, sub: string | undefined): Command {
  const inGroup = commands.filter((command) => command.name.split(' ')[0] === group)
  const names = inGroup.map((command) => command.name.split(' ')[1] ?? '')
  const list = `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`
  if (sub === undefined) throw new CliError(`${group} needs a command: ${list}`)
  const found = inGroup.find((command) => command.name === `${group} ${sub}`)
  if (found) return found
  const guess = closest(sub, names)
  throw new CliError(`unknown ${group} command "${sub}"${guess ? ` (did you mean ${guess}?)` : ''}: use ${list}`)
}
