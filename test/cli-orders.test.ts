// `petstore orders …` and `petstore inventory` against a real server.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import type { Inventory, Order } from '../src/schemas/order.js'
import type { Pet } from '../src/schemas/pet.js'
import { runCli } from './helpers/cli.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const run = promisify(execFile)

describe('petstore orders … and petstore inventory', () => {
  let server: TestServer
  let env: Record<string, string>
  before(async () => {
    server = await startTestServer()
    // A DATABASE_URL the store would refuse: these commands must not read it.
    env = { PETSTORE_URL: server.url, PETSTORE_API_KEY: await server.createKey('pro'), DATABASE_URL: 'mysql://nowhere' }
  })
  after(() => server.close())

  const cli = (argv: string[], environment: Record<string, string> = env) => runCli(argv, environment)
  const newPet = async (name: string) => (await cli(['pets', 'create', '--name', name, '--category-id', '1'])).json<Pet>()

  it('orders place prints the order; get, complete and cancel print it as it becomes; inventory counts the pets', async () => {
    const before = (await cli(['inventory'])).json<Inventory>()
    const rex = await newPet('Rex')
    const placed = await cli(['orders', 'place', '--pet-id', String(rex.id), '--idempotency-key', 'cli-order-1'])
    assert.equal(placed.code, 0, placed.err.join('\n'))
    const order = placed.json<Order>()
    assert.equal(order.petId, rex.id)
    assert.equal(order.status, 'placed')
    // The same key again: the same order, not a 409.
    assert.deepEqual((await cli(['orders', 'place', '--pet-id', String(rex.id), '--idempotency-key', 'cli-order-1'])).json<Order>(), order)
    assert.deepEqual((await cli(['orders', 'get', String(order.id)])).json<Order>(), order)
    assert.deepEqual((await cli(['inventory'])).json<Inventory>(), { ...before, pending: before.pending + 1 })

    const completed = await cli(['orders', 'complete', String(order.id)])
    assert.equal(completed.code, 0)
    assert.equal(completed.json<Order>().status, 'completed')
    assert.ok(completed.json<Order>().closedAt)

    const bella = await newPet('Bella')
    const other = (await cli(['orders', 'place', '--pet-id', String(bella.id)])).json<Order>()
    const cancelled = await cli(['orders', 'cancel', String(other.id)])
    assert.equal(cancelled.code, 0)
    assert.equal(cancelled.json<Order>().status, 'cancelled')
    assert.deepEqual((await cli(['inventory'])).json<Inventory>(), { ...before, available: before.available + 1, sold: before.sold + 1 })
  })

  it('orders list prints the array, the next cursor on stderr, and follows every page with --all', async () => {
    const own = { ...env, PETSTORE_API_KEY: await server.createKey('pro') }
    const ids: number[] = []
    for (const name of ['A', 'B', 'C']) ids.push((await cli(['orders', 'place', '--pet-id', String((await newPet(name)).id)], own)).json<Order>().id)
    const first = await cli(['orders', 'list', '--status', 'placed', '--limit', '2'], own)
    assert.equal(first.code, 0, first.err.join('\n'))
    assert.deepEqual(
      first.json<Order[]>().map((order) => order.id),
      ids.slice(0, 2),
    )
    const cursor = /--cursor (\S+)/.exec(first.err.join('\n'))?.[1]
    assert.ok(cursor, first.err.join('\n'))
    const second = await cli(['orders', 'list', '--status', 'placed', '--limit', '2', '--cursor', cursor], own)
    assert.deepEqual(
      second.json<Order[]>().map((order) => order.id),
      ids.slice(2),
    )
    assert.deepEqual(second.err, []) // the last page
    const all = await cli(['orders', 'list', '--limit', '1', '--all'], own)
    assert.deepEqual(
      all.json<Order[]>().map((order) => order.id),
      ids,
    )
    assert.deepEqual((await cli(['orders', 'list', '--status', 'completed'], own)).json(), [])
  })

  it('prints "petstore: <status> <code>: <message>" for a 409 or another key\'s order and exits 1', async () => {
    const pet = await newPet('Popular')
    const order = (await cli(['orders', 'place', '--pet-id', String(pet.id)])).json<Order>()
    const unavailable = await cli(['orders', 'place', '--pet-id', String(pet.id)])
    assert.equal(unavailable.code, 1)
    assert.equal(unavailable.err.length, 1)
    assert.match(unavailable.err[0]!, /^petstore: 409 pet_unavailable: /)
    assert.equal((await cli(['orders', 'cancel', String(order.id)])).code, 0)
    const closed = await cli(['orders', 'complete', String(order.id)])
    assert.equal(closed.code, 1)
    assert.match(closed.err[0]!, /^petstore: 409 order_closed: /)
    const stranger = await cli(['orders', 'get', String(order.id)], { ...env, PETSTORE_API_KEY: await server.createKey('pro') })
    assert.equal(stranger.code, 1)
    assert.match(stranger.err[0]!, /^petstore: 404 not_found: /)
  })

  const mistakes: [string, string[], RegExp][] = [
    ['orders without a command', ['orders'], /orders needs a command: place, list, get, complete or cancel/],
    ['an unknown orders command', ['orders', 'adopt'], /unknown orders command "adopt"/],
    ['place without --pet-id', ['orders', 'place'], /usage: petstore orders place --pet-id N/],
    ['a pet id that is not a number', ['orders', 'place', '--pet-id', 'rex'], /--pet-id must be a positive integer/],
    ['an unknown order status', ['orders', 'list', '--status', 'pending'], /--status must be one of placed, completed, cancelled/],
    ['a limit that is not a number', ['orders', 'list', '--limit', 'ten'], /--limit/],
    ['get without an id', ['orders', 'get'], /usage: petstore orders get ID/],
    ['complete with two ids', ['orders', 'complete', '1', '2'], /usage: petstore orders complete ID/],
    ['cancel with an id that is not a number', ['orders', 'cancel', '-1'], /ID must be a positive integer|-1/],
    ['an argument to inventory', ['inventory', '--all'], /all/],
  ]
  for (const [what, argv, message] of mistakes) {
    it(`exits 2 with one line on stderr for ${what}`, async () => {
      const res = await cli(argv)
      assert.equal(res.code, 2)
      assert.equal(res.err.length, 1)
      assert.match(res.err[0]!, message)
    })
  }

  it('exits 2 naming PETSTORE_API_KEY when it is not set', async () => {
    for (const argv of [['orders', 'list'], ['inventory']]) {
      const res = await cli(argv, { PETSTORE_URL: server.url })
      assert.equal(res.code, 2)
      assert.match(res.err[0]!, /PETSTORE_API_KEY/)
    }
  })

  it('runs as an installed command: bin/petstore.js inventory', async () => {
    const { stdout } = await run(process.execPath, ['bin/petstore.js', 'inventory'], { env: { ...process.env, ...env } })
    const inventory = JSON.parse(stdout) as Inventory
    assert.deepEqual(Object.keys(inventory).sort(), ['available', 'pending', 'sold'])
    assert.ok(Object.values(inventory).every((count) => Number.isInteger(count) && count >= 0))
  })
})
