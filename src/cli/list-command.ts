// `pets list` and `orders list`: one page as a JSON array on stdout (the next page's
// cursor on stderr, so that a pipe parses stdout alone), or every page with --all.
import { positiveInteger } from './arguments.js'
import { CliError } from './cli-error.js'
import { printableJson, type Io } from './io.js'

export interface ListOptions<S> {
  status: S | undefined
  limit: number | undefined
  cursor: string | undefined
}

export interface Lister<S extends string, T> {
  /** What is listed, plural: "pets", "orders". */
  noun: string
  statuses: readonly S[]
  page(options: ListOptions<S>): Promise<{ items: T[]; nextCursor: string | undefined }>
  all(options: ListOptions<S>): AsyncGenerator<T, void, undefined>
}

/** The flags of a list command. */
export function listFlags(statuses: string) {
  return {
    status: { value: 'S', description: `only this status: ${statuses}` },
    limit: { value: 'N', description: 'items per page, 1 to 100 (default 20)' },
    cursor: { value: 'C', description: 'the page after this cursor (from the previous page)' },
    all: { description: 'follow the cursors and print every page as one array' },
  } as const
}

interface ListValues {
  status: string | undefined
  limit: string | undefined
  cursor: string | undefined
  all: boolean
}

export async function listCommand<S extends string, T>(values: ListValues, io: Io, lister: Lister<S, T>): Promise<number> {
  const options: ListOptions<S> = {
    status: values.status === undefined ? undefined : oneOf(values.status, lister.statuses),
    limit: values.limit === undefined ? undefined : positiveInteger(values.limit, '--limit'),
    cursor: values.cursor,
  }
  if (values.all) {
    const items: T[] = []
    for await (const item of lister.all(options)) items.push(item)
    io.out(printableJson(items))
    return 0
  }
  const { items, nextCursor } = await lister.page(options)
  io.out(printableJson(items))
  if (nextCursor !== undefined) io.err(`petstore: more ${lister.noun}: next page with --cursor ${nextCursor} (or --all for every page)`)
  return 0
}

/** A --status value (or `flag`'s), checked against the values the API takes. */
export function oneOf<S extends string>(value: string, statuses: readonly S[], flag = '--status'): S {
  if (!(statuses as readonly string[]).includes(value)) throw new CliError(`${flag} must be one of ${statuses.join(', ')}, got "${value}"`)
  return value as S
}
