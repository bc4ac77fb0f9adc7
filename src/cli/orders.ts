// `petstore orders …` and `petstore inventory`: the adoption workflow (decision D10)
// through the typed client, against a running service, as the pets commands do.
import { parseArgs } from 'node:util'
import type { PetstoreClient } from '../client/index.js'
import { ORDER_STATUSES } from '../schemas/order.js'
import { positiveInteger } from './arguments.js'
import { CliError } from './cli-error.js'
import { listCommand } from './list-command.js'
import type { Io } from './io.js'
import { withClient } from './pets.js'

type Env = Readonly<Record<string, string | undefined>>

const COMMANDS = 'place, get, list, complete or cancel'

export async function ordersCommand(argv: string[], env: Env, io: Io): Promise<number> {
  const [sub, ...rest] = argv
  if (sub !== 'place' && sub !== 'get' && sub !== 'list' && sub !== 'complete' && sub !== 'cancel') {
    throw new CliError(sub ? `unknown orders command "${sub}": use ${COMMANDS}` : `orders needs a command: ${COMMANDS}`)
  }
  const run = { place, get, list, complete, cancel }[sub]
  return withClient(env, io, (client) => run(rest, client, io))
}

export async function inventoryCommand(argv: string[], env: Env, io: Io): Promise<number> {
  parseArgs({ args: argv, options: {} })
  return withClient(env, io, async (client) => {
    io.out(JSON.stringify(await client.getInventory(), null, 2))
    return 0
  })
}

async function place(argv: string[], client: PetstoreClient, io: Io): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'pet-id': { type: 'string' }, 'idempotency-key': { type: 'string' } } })
  if (values['pet-id'] === undefined) throw new CliError('usage: petstore orders place --pet-id N [--idempotency-key K]')
  const petId = positiveInteger(values['pet-id'], '--pet-id')
  const key = values['idempotency-key']
  io.out(JSON.stringify(await client.placeOrder(petId, key === undefined ? {} : { idempotencyKey: key }), null, 2))
  return 0
}

async function get(argv: string[], client: PetstoreClient, io: Io): Promise<number> {
  io.out(JSON.stringify(await client.getOrder(orderId(argv, 'get')), null, 2))
  return 0
}

function list(argv: string[], client: PetstoreClient, io: Io): Promise<number> {
  return listCommand(argv, io, {
    noun: 'orders',
    statuses: ORDER_STATUSES,
    page: async (options) => {
      const { orders, nextCursor } = await client.listOrders(options)
      return { items: orders, nextCursor }
    },
    all: (options) => client.allOrders(options),
  })
}

async function complete(argv: string[], client: PetstoreClient, io: Io): Promise<number> {
  io.out(JSON.stringify(await client.completeOrder(orderId(argv, 'complete')), null, 2))
  return 0
}

async function cancel(argv: string[], client: PetstoreClient, io: Io): Promise<number> {
  io.out(JSON.stringify(await client.cancelOrder(orderId(argv, 'cancel')), null, 2))
  return 0
}

function orderId(argv: string[], command: string): number {
  const { positionals } = parseArgs({ args: argv, options: {}, allowPositionals: true })
  const [id] = positionals
  if (positionals.length !== 1 || id === undefined) throw new CliError(`usage: petstore orders ${command} ID`)
  return positiveInteger(id, 'ID')
}

