// `petstore categories …`: list, show, create, update and delete categories through the
// typed client, against a running service (PETSTORE_URL, PETSTORE_API_KEY), as the
// pets commands do.
import { printableJson } from './io.js'
import { idempotencyKeyFlag, idempotencyOption, positiveInteger } from './arguments.js'
import { CliError } from './cli-error.js'
import { defineCommand } from './command.js'
import { listCommand, listFlags } from './list-command.js'
import { withClient } from './pets.js'

const { limit, cursor, all } = listFlags('')

export const categoriesCommands = [
  defineCommand({
    name: 'categories list',
    summary: "List categories as JSON, a page at a time (the next page's cursor on stderr)",
    flags: { limit, cursor, all },
    run: ({ values }, context) =>
      withClient(context, (client) =>
        listCommand({ ...values, status: undefined }, context.io, {
          noun: 'categories',
          statuses: [],
          page: async (options) => {
            const { categories, nextCursor } = await client.listCategories(options)
            return { items: categories, nextCursor }
          },
          all: (options) => client.allCategories(options),
        }),
      ),
  }),

  defineCommand({
    name: 'categories show',
    args: ['ID'],
    summary: 'Print one category as JSON',
    run: ({ args: [id] }, context) =>
      withClient(context, async (client) => {
        context.io.out(printableJson(await client.getCategory(positiveInteger(id, 'ID'))))
        return 0
      }),
  }),

  defineCommand({
    name: 'categories create',
    summary: 'Add a category (names are unique, whatever their case); prints it as JSON',
    flags: {
      name: { value: 'NAME', description: "the category's name", required: true },
      description: { value: 'TEXT', description: 'what it holds, for people' },
      'idempotency-key': idempotencyKeyFlag('the first category, not a 409 (names are unique)'),
    },
    run: ({ values }, context) =>
      withClient(context, async (client) => {
        const category = await client.createCategory(
          { name: values.name, ...(values.description === undefined ? {} : { description: values.description }) },
          idempotencyOption(values['idempotency-key']),
        )
        context.io.out(printableJson(category))
        return 0
      }),
  }),

  defineCommand({
    name: 'categories update',
    args: ['ID'],
    summary: "Change a category's name or description (at least one); prints it as JSON",
    flags: {
      name: { value: 'NAME', description: 'a new name' },
      description: { value: 'TEXT', description: 'a new description ("" for none)' },
    },
    run: ({ values, args: [id] }, context) =>
      withClient(context, async (client) => {
        const changes = { ...(values.name === undefined ? {} : { name: values.name }), ...(values.description === undefined ? {} : { description: values.description }) }
        if (Object.keys(changes).length === 0) throw new CliError('categories update needs at least one of --name or --description')
        context.io.out(printableJson(await client.updateCategory(positiveInteger(id, 'ID'), changes)))
        return 0
      }),
  }),

  defineCommand({
    name: 'categories delete',
    args: ['ID'],
    summary: 'Delete a category no pet names',
    run: ({ args: [id] }, context) =>
      withClient(context, async (client) => {
        await client.deleteCategory(positiveInteger(id, 'ID'))
        context.io.err(`category ${id} deleted`)
        return 0
      }),
  }),
]
