// `petstore pets …`: list, create, get, update and delete pets through the typed client, against
// a running service. It reads only PETSTORE_URL and PETSTORE_API_KEY: it is a
// client of the service, so the server's own settings (DATABASE_URL…) do not matter.
import { printableJson } from './io.js'
import { createClient, PetstoreError, type PetstoreClient } from '../client/index.js'
import { PET_SORTS, PET_STATUSES } from '../schemas/pet.js'
import { idempotencyKeyFlag, idempotencyOption, positiveInteger } from './arguments.js'
import { CliError } from './cli-error.js'
import { defineCommand, type Context } from './command.js'
import { listCommand, listFlags, oneOf } from './list-command.js'

export const DEFAULT_URL = 'http://127.0.0.1:8080'

const STATUS_LIST = PET_STATUSES.join(', ')

/**
 * Runs a command with a client for PETSTORE_URL and PETSTORE_API_KEY (the pets,
 * orders and inventory commands); an API error is one line on stderr, quoting the
 * request id the server logged it under, and exit 1.
 */
export async function withClient(context: Context, run: (client: PetstoreClient) => Promise<number>): Promise<number> {
  const { env, io } = context
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
    io.err(`petstore: ${error.status} ${error.code}: ${error.message}${error.requestId ? ` (request id ${error.requestId})` : ''}`)
    return 1
  }
}

export const petsCommands = [
  defineCommand({
    name: 'pets list',
    summary: "List pets as JSON, a page at a time (the next page's cursor on stderr)",
    flags: {
      ...listFlags(STATUS_LIST),
      status: { value: 'S', description: `only this status, or these (comma-separated): ${STATUS_LIST}` },
      'category-id': { value: 'N', description: 'only this category, or these (comma-separated ids)' },
      q: { value: 'TEXT', description: 'only pets whose name contains TEXT, in any case (3 characters or more)' },
      ids: { value: 'N,N…', description: 'only these pets (up to 100 ids)' },
      sort: { value: 'ORDER', description: `${PET_SORTS.join(', ')} (write --sort=-id)` },
    },
    run: ({ values }, context) => {
      const { status, 'category-id': categoryId, q, ids, sort, ...paging } = values
      const filters = {
        ...(status === undefined ? {} : { status: status.split(',').map((item) => oneOf(item, PET_STATUSES)) }),
        ...(categoryId === undefined ? {} : { categoryId: idList(categoryId, '--category-id') }),
        ...(q === undefined ? {} : { q }),
        ...(ids === undefined ? {} : { ids: idList(ids, '--ids') }),
        ...(sort === undefined ? {} : { sort: oneOf(sort, PET_SORTS, '--sort') }),
      }
      return withClient(context, (client) =>
        listCommand({ ...paging, status: undefined }, context.io, {
          noun: 'pets',
          statuses: PET_STATUSES,
          page: async (options) => {
            const { pets, nextCursor } = await client.listPets({ ...options, ...filters })
            return { items: pets, nextCursor }
          },
          all: (options) => client.allPets({ ...options, ...filters }),
        }),
      )
    },
  }),

  defineCommand({
    name: 'pets create',
    summary: 'Add a pet; prints it as JSON',
    flags: {
      name: { value: 'NAME', description: "the pet's name", required: true },
      'category-id': { value: 'N', description: "the pet's category", required: true },
      status: { value: 'S', description: `${STATUS_LIST} (default available)` },
      'idempotency-key': idempotencyKeyFlag('the first pet, not a second one'),
    },
    run: ({ values }, context) =>
      withClient(context, async (client) => {
        const pet = await client.createPet(
          {
            name: values.name,
            categoryId: positiveInteger(values['category-id'], '--category-id'),
            ...(values.status === undefined ? {} : { status: oneOf(values.status, PET_STATUSES) }),
          },
          idempotencyOption(values['idempotency-key']),
        )
        context.io.out(printableJson(pet))
        return 0
      }),
  }),

  defineCommand({
    name: 'pets get',
    args: ['ID'],
    summary: 'Print one pet (deprecated by the API: removed 5 Dec 2030)',
    // The command exists for as long as the API serves it; the client warns once that it is deprecated.
    run: ({ args: [id] }, context) =>
      withClient(context, async (client) => {
        context.io.out(printableJson(await client.getPet(positiveInteger(id, 'ID'))))
        return 0
      }),
  }),

  defineCommand({
    name: 'pets update',
    args: ['ID'],
    summary: "Change a pet's fields (at least one); prints it as JSON, its ETag on stderr",
    flags: {
      name: { value: 'NAME', description: 'a new name' },
      'category-id': { value: 'N', description: 'a new category' },
      status: { value: 'S', description: `${STATUS_LIST} (not while an open order holds the pet)` },
      'if-match': { value: 'ETAG', description: 'change it only if it is still this version (412 otherwise)' },
    },
    run: ({ values, args: [id] }, context) =>
      withClient(context, async (client) => {
        const changes = {
          ...(values.name === undefined ? {} : { name: values.name }),
          ...(values['category-id'] === undefined ? {} : { categoryId: positiveInteger(values['category-id'], '--category-id') }),
          ...(values.status === undefined ? {} : { status: oneOf(values.status, PET_STATUSES) }),
        }
        if (Object.keys(changes).length === 0) throw new CliError('pets update needs at least one of --name, --category-id or --status')
        const { pet, etag } = await client.updatePet(positiveInteger(id, 'ID'), changes, values['if-match'] === undefined ? {} : { ifMatch: values['if-match'] })
        context.io.out(printableJson(pet))
        // The version to pass to --if-match next time, apart from the JSON on stdout.
        if (etag) context.io.err(`etag: ${etag}`)
        return 0
      }),
  }),

  defineCommand({
    name: 'pets delete',
    args: ['ID'],
    summary: 'Delete a pet that no open order holds',
    flags: { 'if-match': { value: 'ETAG', description: 'delete it only if it is still this version (412 otherwise)' } },
    run: ({ values, args: [id] }, context) =>
      withClient(context, async (client) => {
        await client.deletePet(positiveInteger(id, 'ID'), values['if-match'] === undefined ? {} : { ifMatch: values['if-match'] })
        context.io.err(`pet ${id} deleted`)
        return 0
      }),
  }),
]

/** A comma list of ids: `1,2,3`. */
const idList = (text: string, name: string): number[] => text.split(',').map((item) => positiveInteger(item, name))
