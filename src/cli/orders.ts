// `petstore orders …` and `petstore inventory`: the adoption workflow through the
// typed client, against a running service, as the pets commands do.
import { printableJson } from './io.js'
import type { PetstoreClient } from '../client/index.js'
import { ORDER_STATUSES } from '../schemas/order.js'
import { idempotencyKeyFlag, idempotencyOption, positiveInteger } from './arguments.js'
import { defineCommand } from './command.js'
import { listCommand, listFlags } from './list-command.js'
import { withClient } from './pets.js'

/** `orders get`, `orders complete`, `orders cancel`: one order by id, printed as JSON after the call. */
function orderCommand(name: string, summary: string, call: (client: PetstoreClient, id: number) => Promise<unknown>) {
  return defineCommand({
    name: `orders ${name}`,
    args: ['ID'],
    summary,
    run: ({ args: [id] }, context) =>
      withClient(context, async (client) => {
        context.io.out(printableJson(await call(client, positiveInteger(id, 'ID'))))
        return 0
      }),
  })
}

export const ordersCommands = [
  defineCommand({
    name: 'orders place',
    summary: 'Reserve an available pet; prints the order as JSON',
    flags: {
      'pet-id': { value: 'N', description: 'the pet to reserve', required: true },
      'idempotency-key': idempotencyKeyFlag('the first order, not a 409'),
    },
    run: ({ values }, context) =>
      withClient(context, async (client) => {
        const petId = positiveInteger(values['pet-id'], '--pet-id')
        context.io.out(printableJson(await client.placeOrder(petId, idempotencyOption(values['idempotency-key']))))
        return 0
      }),
  }),

  defineCommand({
    name: 'orders list',
    summary: "List the key's account's orders as JSON, a page at a time",
    flags: listFlags(ORDER_STATUSES.join(', ')),
    run: (input, context) =>
      withClient(context, (client) =>
        listCommand(input.values, context.io, {
          noun: 'orders',
          statuses: ORDER_STATUSES,
          page: async (options) => {
            const { orders, nextCursor } = await client.listOrders(options)
            return { items: orders, nextCursor }
          },
          all: (options) => client.allOrders(options),
        }),
      ),
  }),

  orderCommand('get', 'Print one of the key\'s account\'s orders', (client, id) => client.getOrder(id)),
  orderCommand('complete', 'Complete an order: its pet is sold', (client, id) => client.completeOrder(id)),
  orderCommand('cancel', 'Cancel an order: its pet is available again', (client, id) => client.cancelOrder(id)),

  defineCommand({
    name: 'inventory',
    summary: 'Print the number of pets in each status',
    run: (_input, context) =>
      withClient(context, async (client) => {
        context.io.out(printableJson(await client.getInventory()))
        return 0
      }),
  }),
]
