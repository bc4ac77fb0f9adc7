// `petstore orders …` and `petstore inventory`: the adoption workflow (decision D10)
// through the typed client, against a running service, as the pets commands do.
import { parseArgs } from 'node:util'
import type { Order, PetstoreClient } from '../client/index.js'
import { ORDER_STATUSES, type OrderStatus } from '../schemas/order.js'
import { positiveInteger } from './arguments.js'
import { CliError } from './cli-error.js'
import type { Io } from './main.js'
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

async function list(argv: string[], client: PetstoreClient, io: Io): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { status: { type: 'string' }, limit: { type: 'string' }, cursor: { type: 'string' }, all: { type: 'boolean' } },
  })
  const options = {
    status: values.status === undefined ? undefined : status(values.status),
    limit: values.limit === undefined ? undefined : positiveInteger(values.limit, '--limit'),
    cursor: values.cursor,
  }
  if (values.all) {
    const orders: Order[] = []
    for await (const order of client.allOrders(options)) orders.push(order)
    io.out(JSON.stringify(orders, null, 2))
    return 0
  }
  const page = await client.listOrders(options)
  io.out(JSON.stringify(page.orders, null, 2))
  // On stderr, so that stdout stays one JSON array a pipe can parse.
  if (page.nextCursor !== undefined) io.err(`petstore: more orders: next page with --cursor ${page.nextCursor} (or --all for every page)`)
  return 0
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

function status(value: string): OrderStatus {
  if (!(ORDER_STATUSES as readonly string[]).includes(value)) throw new CliError(`--status must be one of ${ORDER_STATUSES.join(', ')}, got "${value}"`)
  return value as OrderStatus
}
