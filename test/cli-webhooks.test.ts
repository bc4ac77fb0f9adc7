// `petstore webhooks …`, `events …` and `usage …` beside a running server: what they
// print, and their exit codes (0 done, 1 the API refused, 2 a mistake in the
// arguments, with did-you-mean), as the other commands.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { WebhookEndpoint, WebhookEvent } from '../src/client/index.js'
import { UNLIMITED } from './helpers/keys.js'
import { runCli } from './helpers/cli.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

// A public address given as a literal: nothing to resolve (the tests have no DNS).
const URL = 'https://93.184.215.14/hook'

for (const store of STORES) describe(`petstore webhooks, events and usage (${store})`, () => {
  let server: TestServer
  let env: Record<string, string>
  before(async () => {
    server = await startTestServer({ store })
    env = { PETSTORE_URL: server.url, PETSTORE_API_KEY: await server.createKey('enterprise', UNLIMITED), DATABASE_URL: 'mysql://nowhere' }
  })
  after(() => server.close())

  const cli = (...argv: string[]) => runCli(argv, env)

  it('creates, lists, shows, updates, rotates, tests and deletes a webhook endpoint', async () => {
    const made = await cli('webhooks', 'create', '--url', URL, '--events', 'pet.created,category.created', '--description', 'cli')
    assert.equal(made.code, 0, made.err.join('\n'))
    const endpoint = made.json<WebhookEndpoint>()
    assert.deepEqual([endpoint.url, [...endpoint.enabledEvents].sort(), endpoint.description], [URL, ['category.created', 'pet.created'], 'cli'])
    assert.ok(endpoint.secret?.startsWith('whsec_'))
    assert.match(made.err[0] ?? '', /shown this once/)
    assert.deepEqual((await cli('webhooks', 'list')).json<WebhookEndpoint[]>().map((e) => e.id), [endpoint.id])
    assert.equal((await cli('webhooks', 'show', String(endpoint.id))).json<WebhookEndpoint>().secret, undefined, 'the secret only once')
    const disabled = await cli('webhooks', 'update', String(endpoint.id), '--disable', '--events', '*')
    assert.deepEqual([disabled.json<WebhookEndpoint>().status, disabled.json<WebhookEndpoint>().enabledEvents], ['disabled', ['*']])
    assert.equal((await cli('webhooks', 'update', String(endpoint.id), '--enable')).json<WebhookEndpoint>().status, 'enabled')
    const rotated = (await cli('webhooks', 'rotate-secret', String(endpoint.id), '--grace', '0')).json<WebhookEndpoint>()
    assert.ok(rotated.secret && rotated.secret !== endpoint.secret)
    assert.equal((await cli('webhooks', 'test', String(endpoint.id))).json<WebhookEvent>().type, 'webhook_endpoint.test')
    const deliveries = await cli('webhooks', 'deliveries', String(endpoint.id))
    assert.equal(deliveries.code, 0)
    assert.ok(Array.isArray(deliveries.json()))
    const deleted = await cli('webhooks', 'delete', String(endpoint.id))
    assert.deepEqual([deleted.code, deleted.err], [0, [`webhook endpoint ${endpoint.id} deleted`]])
    const gone = await cli('webhooks', 'show', String(endpoint.id))
    assert.equal(gone.code, 1)
    assert.match(gone.err[0] ?? '', /^petstore: 404 not_found: /)
  })

  it('creates an endpoint once with --idempotency-key: run again, the command prints the first one, its secret included', async () => {
    const args = ['webhooks', 'create', '--url', `${URL}/once`, '--events', '*', '--idempotency-key', 'cli-endpoint-1']
    const first = await cli(...args)
    assert.equal(first.code, 0, first.err.join('\n'))
    const again = await cli(...args)
    assert.equal(again.code, 0, again.err.join('\n'))
    assert.deepEqual(again.json<WebhookEndpoint>(), first.json<WebhookEndpoint>())
    assert.ok(first.json<WebhookEndpoint>().secret?.startsWith('whsec_'))
    const listed = (await cli('webhooks', 'list')).json<WebhookEndpoint[]>().filter((e) => e.url === `${URL}/once`)
    assert.equal(listed.length, 1, 'one endpoint made')
    assert.equal((await cli('webhooks', 'delete', String(first.json<WebhookEndpoint>().id))).code, 0)
  })

  it('lists events by type, a page at a time or all, and redelivers one', async () => {
    await cli('categories', 'create', '--name', 'Evented one')
    await cli('categories', 'create', '--name', 'Evented two')
    const page = await cli('events', 'list', '--type', 'category.created', '--limit', '1')
    assert.equal(page.code, 0, page.err.join('\n'))
    const [newest] = page.json<WebhookEvent[]>()
    assert.equal((newest?.data as { name?: string }).name, 'Evented two')
    assert.match(page.err.join('\n'), /more events: next page with --cursor/)
    const all = (await cli('events', 'list', '--type', 'category.created', '--all', '--limit', '1')).json<WebhookEvent[]>()
    assert.deepEqual(all.map((e) => (e.data as { name?: string }).name), ['Evented two', 'Evented one'])
    await cli('webhooks', 'create', '--url', URL, '--events', 'category.created')
    const subscribed = (await cli('webhooks', 'list')).json<WebhookEndpoint[]>().filter((e) => e.enabledEvents.includes('category.created')).length
    const redelivered = await cli('events', 'redeliver', newest!.id)
    assert.deepEqual([redelivered.code, redelivered.err], [0, [`event ${newest!.id} queued for ${subscribed} endpoint${subscribed === 1 ? '' : 's'}`]])
  })

  it('prints the usage windows and the history as a table', async () => {
    const now = await cli('usage', 'now')
    assert.equal(now.code, 0, now.err.join('\n'))
    assert.match(now.out[0] ?? '', /^minute\s+\d+ used of \d+, \d+ left, resets \d{4}-/)
    assert.match(now.out[1] ?? '', /^day /)
    assert.equal(now.out[2], 'banned  no')
    await server.request('/v1/pets', { key: env.PETSTORE_API_KEY })
    // Usage is recorded after the answer, in batches: wait until the table shows it.
    let table: string[] = []
    for (let i = 0; i < 50 && !/^\d{4}-\d{2}-\d{2}\s+[1-9]/m.test(table.join('\n')); i++) {
      table = (await cli('usage', 'history')).out
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.match(table[0] ?? '', /^DAY \(UTC\)\s+OK\s+RATE LIMITED\s+BANNED\s+FORBIDDEN\s+ERROR\s+TOTAL$/)
    assert.match(table[1] ?? '', /^\d{4}-\d{2}-\d{2}\s+[1-9]\d*\s+0\s+0\s+0\s+0\s+[1-9]\d*$/)
    assert.ok(Array.isArray((await cli('usage', 'history', '--json')).json()))
  })

  it('exits 2 for mistakes in the arguments, with did-you-mean, and prints --help', async () => {
    for (const argv of [
      ['webhooks', 'create', '--url', URL],
      ['webhooks', 'create', '--url', URL, '--events', 'pet.adopted'],
      ['webhooks', 'update', '1'],
      ['webhooks', 'update', '1', '--enable', '--disable'],
      ['webhooks', 'show', 'x'],
      ['events', 'list', '--type', 'pet.adopted'],
      ['events', 'redeliver', '42'],
      ['usage', 'history', '--days', '91'],
    ]) {
      const res = await cli(...argv)
      assert.equal(res.code, 2, `${argv.join(' ')}: ${res.err.join('\n')}`)
    }
    assert.match((await cli('webhooks', 'delivries', '1')).err[0] ?? '', /did you mean deliveries\?/)
    assert.match((await cli('events', 'lst')).err[0] ?? '', /did you mean list\?/)
    assert.match((await cli('usage', 'history', '--huorly')).err[0] ?? '', /did you mean --hourly\?/)
    assert.match((await cli('webhooks', 'create', '--help')).out.join('\n'), /Usage: petstore webhooks create --url URL --events TYPES/)
    const usage = (await runCli(['--help'], env)).out.join('\n')
    for (const command of ['webhooks rotate-secret', 'events redeliver', 'usage history']) assert.match(usage, new RegExp(command))
  })
})
