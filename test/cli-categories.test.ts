// `petstore categories …` and `petstore pets list` with the filters, beside a running
// server on each store: what they print, and their exit codes (0 done, 1 the API
// refused, 2 a mistake in the arguments, with did-you-mean).
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Category } from '../src/schemas/category.js'
import type { Pet } from '../src/schemas/pet.js'
import { runCli } from './helpers/cli.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

for (const store of STORES) describe(`petstore categories … and pets list filters (${store})`, () => {
  let server: TestServer
  let env: Record<string, string>
  before(async () => {
    server = await startTestServer({ store })
    // A DATABASE_URL the store would refuse: these commands are clients of the service.
    env = { PETSTORE_URL: server.url, PETSTORE_API_KEY: await server.createKey('pro'), DATABASE_URL: 'mysql://nowhere' }
  })
  after(() => server.close())

  const cli = (...argv: string[]) => runCli(argv, env)

  it('lists the categories, a page at a time or all of them', async () => {
    const page = await cli('categories', 'list', '--limit', '2')
    assert.equal(page.code, 0, page.err.join('\n'))
    assert.deepEqual(page.json<Category[]>().map((c) => c.name), ['Dogs', 'Cats'])
    assert.match(page.err.join('\n'), /more categories: next page with --cursor \S+/)
    const all = await cli('categories', 'list', '--all', '--limit', '3')
    assert.deepEqual(all.json<Category[]>().slice(0, 7).map((c) => c.id), [1, 2, 3, 4, 5, 6, 7])
  })

  it('creates, shows, updates and deletes a category; the API\'s refusals exit 1 with its code', async () => {
    const made = await cli('categories', 'create', '--name', 'Chinchillas', '--description', 'Soft')
    assert.equal(made.code, 0, made.err.join('\n'))
    const category = made.json<Category>()
    assert.deepEqual(category, { id: category.id, name: 'Chinchillas', description: 'Soft' })
    assert.deepEqual((await cli('categories', 'show', String(category.id))).json<Category>(), category)
    const updated = await cli('categories', 'update', String(category.id), '--description', '')
    assert.deepEqual(updated.json<Category>(), { ...category, description: '' })
    const taken = await cli('categories', 'create', '--name', 'CHINCHILLAS')
    assert.equal(taken.code, 1)
    assert.match(taken.err[0] ?? '', /^petstore: 409 category_name_taken: /)
    await server.request('/v1/pets', { method: 'POST', key: env.PETSTORE_API_KEY, json: { name: 'Chilly', categoryId: category.id } })
    const inUse = await cli('categories', 'delete', String(category.id))
    assert.equal(inUse.code, 1)
    assert.match(inUse.err[0] ?? '', /409 category_in_use/)
    const empty = (await cli('categories', 'create', '--name', 'Empty')).json<Category>()
    const gone = await cli('categories', 'delete', String(empty.id))
    assert.deepEqual([gone.code, gone.err], [0, [`category ${empty.id} deleted`]])
    assert.equal((await cli('categories', 'show', String(empty.id))).code, 1)
  })

  it('creates a category once with --idempotency-key: run again, the command prints the first one', async () => {
    const first = await cli('categories', 'create', '--name', 'Degus', '--idempotency-key', 'cli-category-1')
    assert.equal(first.code, 0, first.err.join('\n'))
    const again = await cli('categories', 'create', '--name', 'Degus', '--idempotency-key', 'cli-category-1')
    assert.equal(again.code, 0, again.err.join('\n'))
    assert.deepEqual(again.json<Category>(), first.json<Category>())
    // Without the key, the second run is a second create: refused, as the name is taken.
    assert.equal((await cli('categories', 'create', '--name', 'Degus')).code, 1)
  })

  it('exits 2 for mistakes in the arguments, with did-you-mean', async () => {
    const typo = await cli('categories', 'lst')
    assert.equal(typo.code, 2)
    assert.match(typo.err[0] ?? '', /unknown categories command "lst" \(did you mean list\?\)/)
    assert.equal((await cli('categories', 'create')).code, 2, 'without --name')
    assert.equal((await cli('categories', 'update', '3')).code, 2, 'without a change')
    assert.equal((await cli('categories', 'show', 'x')).code, 2)
    const flag = await cli('categories', 'create', '--nmae', 'x')
    assert.match(flag.err[0] ?? '', /did you mean --name\?/)
    const help = await cli('categories', 'create', '--help')
    assert.equal(help.code, 0)
    assert.match(help.out.join('\n'), /Usage: petstore categories create --name NAME \[--description TEXT\]/)
    assert.match((await runCli(['--help'], env)).out.join('\n'), /categories list/)
  })

  it('pets list takes the filters: --category-id, --status lists, --q, --ids and --sort', async () => {
    const made: Pet[] = []
    for (const [name, categoryId, status] of [['Luna', 2, 'available'], ['Lunette', 2, 'sold'], ['Rex', 1, 'available'], ['Alune', 1, 'pending']] as const) {
      made.push((await cli('pets', 'create', '--name', name, '--category-id', String(categoryId), '--status', status)).json<Pet>())
    }
    const names = async (...argv: string[]) => {
      const res = await cli('pets', 'list', '--all', ...argv)
      assert.equal(res.code, 0, res.err.join('\n'))
      return res.json<Pet[]>().filter((pet) => made.some((m) => m.id === pet.id)).map((pet) => pet.name)
    }
    assert.deepEqual(await names('--category-id', '2'), ['Luna', 'Lunette'])
    assert.deepEqual(await names('--status', 'pending,sold'), ['Lunette', 'Alune'])
    assert.deepEqual(await names('--q', 'LUN'), ['Luna', 'Lunette', 'Alune'])
    assert.deepEqual(await names('--q', 'lun', '--sort=-id'), ['Alune', 'Lunette', 'Luna'])
    assert.deepEqual(await names('--q', 'lun', '--sort', 'name'), ['Alune', 'Luna', 'Lunette'])
    assert.deepEqual(await names('--ids', `${made[2]!.id},${made[0]!.id}`), ['Luna', 'Rex'])
    for (const argv of [['--status', 'lost'], ['--category-id', '1,x'], ['--sort', 'age'], ['--ids', '0']]) {
      const res = await cli('pets', 'list', ...argv)
      assert.equal(res.code, 2, `${argv.join(' ')}: ${res.err.join('\n')}`)
    }
    const short = await cli('pets', 'list', '--q', 'ab')
    assert.deepEqual([short.code, /400 invalid_parameter/.test(short.err[0] ?? '')], [1, true], 'the API judges q')
  })
})
