// `petstore pets …`: list, create, get, update and delete pets through the typed client, against
// a running service. It reads only PETSTORE_URL and PETSTORE_API_KEY: it is a
// client of the service, so the server's own settings (DATABASE_URL…) do not matter.
import { parseArgs } from 'node:util'
import { createClient, PetstoreError, type PetstoreClient } from '../client/index.js'
import { PET_STATUSES } from '../schemas/pet.js'
import { positiveInteger } from './arguments.js'
import { CliError } from './cli-error.js'
import { listCommand, oneOf } from './list-command.js'
import type { Io } from './io.js'

export const DEFAULT_URL = 'http://127.0.0.1:8080'

export async function petsCommand(argv: string[], env: Readonly<Record<string, string | undefined>>, io: Io): Promise<number> {
  const [sub, ...rest] = argv
  const commands = { list, create, get, update, delete: remove }
  if (sub === undefined || !Object.hasOwn(commands, sub)) {
    const names = 'list, create, get, update or delete'
    throw new CliError(sub ? `unknown pets command "${sub}": use ${names}` : `pets needs a command: ${names}`)
  }
  const run = commands[sub as keyof typeof commands]
  return withClient(env, io, (client) => run(rest, client, io))
}

/**
 * Runs a command with a client for PETSTORE_URL and PETSTORE_API_KEY (the pets,
 * orders and inventory commands); an API error is one line on stderr and exit 1.
 */
export async function withClient(env: Readonly<Record<string, string | undefined>>, io: Io, run: (client: PetstoreClient) => Promise<number>): Promise<number> {
  const apiKey = env.PETSTORE_API_KEY
  if (!apiKey) throw new CliError('this command needs PETSTORE_API_KEY (create one with "petstore keys create --plan free")')
  let client: PetstoreClient
  try {
    client = createClient({ baseUrl: env.PETSTORE_URL || DEFAULT_URL, apiKey })
  } catch (error) {
    throw new CliError(`PETSTORE_URL: ${(error as Error).message}`)
  }
  try {
    return await run(client)
  } catch (error) {
    if (!(error instanceof PetstoreError)) throw error
    io.err(`petstore: ${error.status} ${error.code}: ${error.message}`)
    return 1
  }
}

function list(argv: string[], client: PetstoreClient, io: Io): Promise<number> {
  return listCommand(argv, io, {
    noun: 'pets',
    statuses: PET_STATUSES,
    page: async (options) => {
      const { pets, nextCursor } = await client.listPets(options)
      return { items: pets, nextCursor }
    },
    all: (options) => client.allPets(options),
  })
}

async function create(argv: string[], client: PetstoreClient, io: Io): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { name: { type: 'string' }, 'category-id': { type: 'string' }, status: { type: 'string' }, 'idempotency-key': { type: 'string' } },
  })
  if (values.name === undefined || values['category-id'] === undefined) {
    throw new CliError('usage: petstore pets create --name NAME --category-id N [--status S] [--idempotency-key K]')
  }
  const pet = await client.createPet(
    {
      name: values.name,
      categoryId: positiveInteger(values['category-id'], '--category-id'),
      ...(values.status === undefined ? {} : { status: oneOf(values.status, PET_STATUSES) }),
    },
    values['idempotency-key'] === undefined ? {} : { idempotencyKey: values['idempotency-key'] },
  )
  io.out(JSON.stringify(pet, null, 2))
  return 0
}

async function get(argv: string[], client: PetstoreClient, io: Io): Promise<number> {
  const { positionals } = parseArgs({ args: argv, options: {}, allowPositionals: true })
  const [id] = positionals
  if (positionals.length !== 1 || id === undefined) throw new CliError('usage: petstore pets get ID')
  // The command exists for as long as the API serves it; the client warns once that it is deprecated.
  io.out(JSON.stringify(await client.getPet(positiveInteger(id, 'ID')), null, 2))
  return 0
}


async function update(argv: string[], client: PetstoreClient, io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { name: { type: 'string' }, 'category-id': { type: 'string' }, status: { type: 'string' }, 'if-match': { type: 'string' } },
    allowPositionals: true,
  })
  const [id] = positionals
  const usage = 'usage: petstore pets update ID [--name NAME] [--category-id N] [--status S] [--if-match ETAG] (at least one change)'
  if (positionals.length !== 1 || id === undefined) throw new CliError(usage)
  const changes = {
    ...(values.name === undefined ? {} : { name: values.name }),
    ...(values['category-id'] === undefined ? {} : { categoryId: positiveInteger(values['category-id'], '--category-id') }),
    ...(values.status === undefined ? {} : { status: oneOf(values.status, PET_STATUSES) }),
  }
  if (Object.keys(changes).length === 0) throw new CliError(usage)
  const { pet, etag } = await client.updatePet(positiveInteger(id, 'ID'), changes, values['if-match'] === undefined ? {} : { ifMatch: values['if-match'] })
  io.out(JSON.stringify(pet, null, 2))
  // The version to pass to --if-match next time, apart from the JSON on stdout.
  if (etag) io.err(`etag: ${etag}`)
  return 0
}

async function remove(argv: string[], client: PetstoreClient, io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: { 'if-match': { type: 'string' } }, allowPositionals: true })
  const [id] = positionals
  if (positionals.length !== 1 || id === undefined) throw new CliError('usage: petstore pets delete ID [--if-match ETAG]')
  await client.deletePet(positiveInteger(id, 'ID'), values['if-match'] === undefined ? {} : { ifMatch: values['if-match'] })
  io.err(`pet ${id} deleted`)
  return 0
}
