// GET /console, the web console: over HTTP (its security and caching headers, its
// compressed size), then in a real Chromium on each store: sign in, a read_only key's
// writes disabled (its scopes read from GET /v1/account), pets (add, edit, a stale
// If-Match, delete, the XSS case, filters by category and name), orders,
// keys, webhooks with a receiver on loopback (a delivery's next retry too), the usage
// chart, axe-core on every page.
// The console is the one `npm run build` makes (dist/console/; `npm test` builds first).
import { existsSync, readFileSync } from 'node:fs'
import { createServer, get, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import { gunzipSync } from 'node:zlib'
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { chromium, type Browser, type Page } from 'playwright-core'
import { CONSOLE_DIR } from '../src/plugins/console.js'
import { OPERATION_SCOPES } from '../src/routes/v1/scopes.js'
import { NEEDS } from '../console/src/scopes.js'
import { parseCidrs } from '../src/webhooks/outbound.js'
import { startDispatcher, type Dispatcher } from '../src/webhooks/dispatcher.js'
import { systemClock } from '../src/clock.js'
import type { Pet } from '../src/schemas/pet.js'
import type { DeliveryAttempt } from '../src/schemas/webhook.js'
import { SCOPE_PRESETS } from '../src/vocabulary/scopes.js'
import { startTestServer, STORES, type TestServer } from './helpers/server.js'
import { runOrSkip } from './helpers/services.js'

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']
const JS_BUDGET_GZIP = 150 * 1024

/** The script and style sheet the built page names. */
function assetsOf(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((match) => match[1]!)
}

describe('the console, built', () => {
  it('is built by npm run build into dist/console/', () => {
    assert.ok(existsSync(`${CONSOLE_DIR}index.html`), 'run npm run build first (npm test does)')
  })

  it('names the operations with the scopes the API requires', () => {
    for (const [operation, scope] of Object.entries(NEEDS)) assert.equal(scope, OPERATION_SCOPES[operation], operation)
  })
})

describe('GET /console over HTTP', () => {
  let server: TestServer
  before(async () => {
    server = await startTestServer()
  })
  after(() => server.close())

  it('serves the page without a key, outside the rate limit, with the security headers', async () => {
    for (const path of ['/console', '/console/']) {
      const res = await server.request(path)
      assert.equal(res.status, 200, path)
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/)
      assert.equal(res.headers.get('x-ratelimit-limit'), null)
      assert.match(res.text, /<div id="app"><\/div>/)
      assert.doesNotMatch(res.text, /<script>|<script [^>]*>[^<]/, 'no inline script')
      const csp = res.headers.get('content-security-policy') ?? ''
      assert.match(csp, /default-src 'none'/)
      assert.match(csp, /script-src 'self'(;|$)/)
      assert.match(csp, /connect-src 'self'(;|$)/)
      assert.match(csp, /frame-ancestors 'none'/)
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/)
      assert.equal(res.headers.get('x-frame-options'), 'DENY')
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer')
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff')
      assert.equal(res.headers.get('cross-origin-opener-policy'), 'same-origin')
      assert.equal(res.headers.get('cache-control'), 'no-cache')
    }
  })

  it('serves hashed assets compressed, immutable, with an ETag that answers 304', async () => {
    const page = await server.request('/console')
    const assets = assetsOf(page.text)
    assert.ok(assets.some((a) => a.endsWith('.js')) && assets.some((a) => a.endsWith('.css')), `a script and a style sheet: ${assets.join(', ')}`)
    for (const asset of assets) {
      assert.match(asset, /-[A-Za-z0-9_-]{8,}\.(js|css)$/, 'named after its content')
      for (const encoding of ['br', 'gzip']) {
        const res = await fetch(server.url + asset, { headers: { 'accept-encoding': encoding } })
        assert.equal(res.status, 200)
        assert.equal(res.headers.get('content-encoding'), encoding, `${asset} in ${encoding}`)
        assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable')
        assert.match(res.headers.get('vary') ?? '', /accept-encoding/i)
        assert.equal(res.headers.get('content-security-policy') !== null, true)
        const etag = res.headers.get('etag')
        assert.match(etag ?? '', /^"[^"]+"$/)
        await res.arrayBuffer()
        const again = await fetch(server.url + asset, { headers: { 'accept-encoding': encoding, 'if-none-match': etag! } })
        assert.equal(again.status, 304)
      }
      const refused = await rawGet(server.url + asset, { 'accept-encoding': 'br;q=0, gzip;q=0.0, identity' })
      assert.equal(refused.encoding, undefined, 'q=0 refuses an encoding')
      const plain = await fetch(server.url + asset, { headers: { 'accept-encoding': 'identity' } })
      assert.equal(plain.headers.get('content-encoding'), null)
      assert.equal(Buffer.from(await plain.arrayBuffer()).length, readFileSync(CONSOLE_DIR + asset.replace('/console/', '')).length)
    }
    const etag = page.headers.get('etag')!
    assert.equal((await server.request('/console', { headers: { 'if-none-match': etag } })).status, 304)
    const head = await fetch(`${server.url}/console`, { method: 'HEAD' })
    assert.equal(head.status, 200)
    assert.equal(head.headers.get('x-frame-options'), 'DENY')
  })

  it(`sends at most ${JS_BUDGET_GZIP / 1024} KB of JavaScript, gzipped`, async () => {
    const scripts = assetsOf((await server.request('/console')).text).filter((a) => a.endsWith('.js'))
    assert.ok(scripts.length > 0)
    let total = 0
    for (const script of scripts) {
      // The bytes on the wire (fetch would decode them): node:http leaves them as sent.
      const { encoding, body } = await rawGet(server.url + script, { 'accept-encoding': 'gzip' })
      assert.equal(encoding, 'gzip')
      assert.ok(gunzipSync(body).length > body.length)
      total += body.length
    }
    assert.ok(total <= JS_BUDGET_GZIP, `${total} bytes of gzipped JavaScript`)
  })

  it('answers the JSON Error 404 for unknown paths under /console', async () => {
    for (const path of ['/console/nope', '/console/assets/nope.js', '/console/%2e%2e/%2e%2e/package.json', '/console/assets/../../package.json', '/console/%00']) {
      const res = await server.request<{ code: string }>(path)
      assert.equal(res.status, 404, path)
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
      assert.equal(res.body.code, 'not_found')
    }
  })
})

/** A webhook receiver on loopback that answers `status` (200) and counts what it got. */
async function startReceiver(status = 200) {
  let received = 0
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      received++
      res.writeHead(status).end(status === 200 ? 'ok' : 'not now')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received: () => received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/** axe-core's violations on the page as it is (WCAG 2.x A and AA rules and best practices). */
async function axeViolations(page: Page): Promise<string[]> {
  // Through the DevTools protocol, as a test tool: the page's CSP (no inline script) stays on.
  await page.evaluate(AXE)
  // A string, run in the page: its globals (document, axe) are the browser's.
  return page.evaluate<string[]>('axe.run(document).then((r) => r.violations.map((v) => v.id + ": " + JSON.stringify(v.nodes.map((n) => n.target))))')
}

const BROWSER_SUITE = 'the console in a browser'
const available = runOrSkip(existsSync(CHROMIUM), BROWSER_SUITE, `chromium is not installed at ${CHROMIUM}`)

for (const store of STORES) {
  describe(`${BROWSER_SUITE} (${store})`, { skip: !available }, () => {
    let server: TestServer
    let browser: Browser
    let page: Page
    let key: string
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let dispatcher: Dispatcher
    const elsewhere: string[] = []
    const problems: string[] = []
    /** Every request the page made to /v1, as `METHOD /v1/path?query`, and the 403s it got. */
    const apiCalls: string[] = []
    const refusals403: string[] = []
    const dialogs: string[] = []

    before(async () => {
      server = await startTestServer({ store, env: { PETSTORE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } })
      key = await server.createKey('pro', {}, { name: 'console admin', scopes: [...SCOPE_PRESETS.all, 'keys:read', 'keys:write'] })
      receiver = await startReceiver()
      // One retry, a minute after a failed attempt: none happens while a test looks at it.
      dispatcher = startDispatcher({ deliveries: server.store.deliveries, secrets: server.secrets, clock: systemClock, allowed: parseCidrs(['127.0.0.0/8']), pollMs: 100, listen: false, schedule: [60_000] })
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS })
      const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, permissions: ['clipboard-read', 'clipboard-write'] })
      page = await context.newPage()
      page.setDefaultTimeout(15_000)
      page.on('request', (request) => {
        const url = new URL(request.url())
        if (!['data:', 'blob:'].includes(url.protocol) && url.origin !== server.url) elsewhere.push(request.url())
        // The key travels in the Authorization header only, never in a URL.
        if (request.url().includes(key.slice(-12))) problems.push(`key in URL ${request.url()}`)
        if (url.pathname.startsWith('/v1/')) apiCalls.push(`${request.method()} ${url.pathname}${url.search}`)
      })
      page.on('response', (response) => {
        if (response.status() === 403) refusals403.push(response.url())
      })
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(message.text())
      })
      page.on('pageerror', (error) => problems.push(error.message))
      page.on('dialog', async (dialog) => {
        dialogs.push(dialog.message())
        await dialog.dismiss()
      })
    })

    after(async () => {
      await browser?.close()
      await dispatcher?.close()
      await receiver?.close()
      await server?.close()
    })

    async function signIn(secret: string) {
      await page.goto(`${server.url}/console`)
      await page.getByLabel('API key').fill(secret)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('button', { name: 'Sign out' }).waitFor()
    }

    async function open(name: string) {
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name }).click()
      await page.getByRole('heading', { level: 1, name }).waitFor()
    }

    async function expectNoAxeViolations(name: string) {
      assert.deepEqual(await axeViolations(page), [], `axe on ${name}`)
      // CONSOLE_SCREENSHOTS=docs/console keeps a picture of each page checked (docs/console.md shows them).
      const folder = process.env.CONSOLE_SCREENSHOTS
      if (folder && store === 'sqlite') await page.screenshot({ path: `${folder}/${name.replace(/^the /, '').replace(/[^a-z0-9]+/g, '-')}.png`, fullPage: true })
    }

    it('refuses a wrong key with the API\'s message, and signs in with a good one', async () => {
      await page.goto(`${server.url}/console`)
      await expectNoAxeViolations('the sign-in page')
      await page.getByLabel('API key').fill('ps_test_not-a-key')
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.getByRole('alert').waitFor()
      assert.match((await page.getByRole('alert').textContent()) ?? '', /unauthorized/)
      await signIn(key)
      assert.equal(await page.evaluate<string | null>("sessionStorage.getItem('petstore.apiKey')"), key)
      assert.deepEqual((await page.context().cookies()).length, 0)
    })

    it('shows the account, its plan and the key\'s scopes', async () => {
      assert.match((await page.getByTestId('account').textContent()) ?? '', /pro plan/)
      assert.match((await page.getByTestId('plan').textContent()) ?? '', /^pro: \d+ requests a minute/)
      const scopes = (await page.getByTestId('scopes').textContent()) ?? ''
      for (const scope of ['pets:write', 'keys:write', 'webhooks:write']) assert.ok(scopes.includes(scope), scope)
      await expectNoAxeViolations('the overview')
    })

    it('adds a pet whose name is markup, and shows it as text', async () => {
      await open('Pets')
      const available = page.getByTestId('inventory-available')
      await available.waitFor()
      const availableBefore = Number(await available.textContent())
      const name = '<img src=x onerror=alert(1)>'
      await page.getByRole('form', { name: 'Add a pet' }).getByLabel('Name').fill(name)
      await page.getByRole('form', { name: 'Add a pet' }).getByRole('button', { name: 'Add pet' }).click()
      await page.getByRole('status').filter({ hasText: 'Added' }).waitFor()
      const cell = page.locator('td.pet-name', { hasText: name })
      await cell.waitFor()
      assert.equal(await cell.textContent(), name)
      assert.equal(await page.locator('table img').count(), 0)
      assert.deepEqual(dialogs, [])
      // The inventory is read again after a change.
      await waitForAsync(async () => Number(await available.textContent()) === availableBefore + 1)
      await expectNoAxeViolations('the pets page')

      // A refusal says the API's message once: a detail that repeats it is not added after it.
      const form = page.getByRole('form', { name: 'Add a pet' })
      await form.getByLabel('Name').fill('   ')
      await form.getByRole('button', { name: 'Add pet' }).click()
      const alert = form.getByRole('alert')
      await alert.waitFor()
      assert.equal(await alert.textContent(), 'field "name" must not be blank [invalid_field, 400]')
    })

    it('edits a pet with If-Match, and says so when someone changed it first', async () => {
      const pet = (await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: 'Biscuit', categoryId: 2 } })).body
      await page.reload()
      await page.getByRole('button', { name: 'Sign out' }).waitFor()
      const row = page.locator(`tr[data-pet-id="${pet.id}"]`)
      await row.getByRole('button', { name: 'Edit Biscuit' }).click()
      const form = page.getByRole('form', { name: `Edit pet ${pet.id}` })
      await form.getByLabel('Name').waitFor()
      await form.getByLabel('Name').fill('Biscuit the Brave')
      await form.getByRole('button', { name: 'Save' }).click()
      await page.getByRole('status').filter({ hasText: 'Saved Biscuit the Brave' }).waitFor()
      assert.equal((await server.request<Pet[]>('/v1/pets?limit=100', { key })).body.find((p) => p.id === pet.id)?.name, 'Biscuit the Brave')

      // Opened, then changed by someone else, then saved: 412, and nothing is overwritten.
      await row.getByRole('button', { name: 'Edit Biscuit the Brave' }).click()
      // The form has read the pet (and its ETag) before anyone else changes it.
      await form.getByLabel('Name').waitFor()
      assert.equal(await form.getByLabel('Name').inputValue(), 'Biscuit the Brave')
      await server.request(`/v1/pets/${pet.id}`, { method: 'PATCH', key, json: { name: 'Changed elsewhere' } })
      await form.getByLabel('Name').fill('Stale edit')
      await form.getByRole('button', { name: 'Save' }).click()
      await form.getByRole('alert').waitFor()
      assert.match((await form.getByRole('alert').textContent()) ?? '', /Someone else changed this pet/)
      assert.equal((await server.request<Pet[]>('/v1/pets?limit=100', { key })).body.find((p) => p.id === pet.id)?.name, 'Changed elsewhere')
      await form.getByRole('button', { name: 'Cancel' }).click()
      // The form read each version through the list (ids=, its Pet-ETags), never the deprecated GET /v1/pets/{id}.
      assert.ok(apiCalls.includes(`GET /v1/pets?ids=${pet.id}`), apiCalls.join('\n'))
      assert.deepEqual(apiCalls.filter((call) => /^GET \/v1\/pets\/\d+/.test(call)), [])
    })

    it('deletes a pet after a second click', async () => {
      const pet = (await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: 'Leaving', categoryId: 1 } })).body
      await page.reload()
      await page.getByRole('button', { name: 'Sign out' }).waitFor()
      const row = page.locator(`tr[data-pet-id="${pet.id}"]`)
      await row.getByRole('button', { name: 'Delete Leaving' }).click()
      await row.getByRole('button', { name: 'Really delete Leaving' }).click()
      await row.waitFor({ state: 'detached' })
      assert.equal((await server.request(`/v1/pets/${pet.id}`, { key })).status, 404)
    })

    it('reserves a pet and completes the order; the inventory follows', async () => {
      const pet = (await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: 'Adoptee', categoryId: 1 } })).body
      await page.reload()
      await page.getByRole('button', { name: 'Sign out' }).waitFor()
      const soldBefore = Number(await page.getByTestId('inventory-sold').textContent())
      await page.locator(`tr[data-pet-id="${pet.id}"]`).getByRole('button', { name: 'Reserve Adoptee' }).click()
      await page.getByRole('status').filter({ hasText: 'Reserved Adoptee' }).waitFor()
      await open('Orders')
      const row = page.locator('tr', { has: page.locator('td:nth-child(2)', { hasText: new RegExp(`^${pet.id}$`) }) })
      await row.getByRole('button', { name: /^Complete order/ }).click()
      await page.getByRole('status').filter({ hasText: `pet ${pet.id} is sold` }).waitFor()
      assert.equal((await server.request<Pet>(`/v1/pets/${pet.id}`, { key })).body.status, 'sold')
      await expectNoAxeViolations('the orders page')
      await open('Pets')
      // Polled from here: the page's CSP refuses the eval that page.waitForFunction polls with.
      const sold = page.getByTestId('inventory-sold')
      await waitForAsync(async () => (await sold.count()) > 0 && Number(await sold.textContent()) === soldBefore + 1)
    })

    it('filters pets by category and by name, paging with the cursor of those filters', async () => {
      const post = async (name: string, categoryId: number) => (await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name, categoryId } })).body
      const lizard = await post('Lizzie the lizard', 5)
      // 23 birds named alike: two pages of the name filter.
      for (let i = 1; i <= 23; i++) await post(`Zebrafinch ${i}`, 3)
      await page.reload()
      await page.getByRole('button', { name: 'Sign out' }).waitFor()
      const filters = page.getByRole('search', { name: 'Filter pets' })
      const rows = page.locator('tbody tr[data-pet-id]')
      const names = async () => (await page.locator('tbody td.pet-name').allTextContents()).join(' | ')
      const pager = page.getByRole('navigation', { name: 'Pages of pets' })

      // By category, chosen and shown by name (GET /v1/categories).
      await filters.getByLabel('Category').selectOption({ label: 'Reptiles' })
      await waitForAsync(async () => (await rows.count()) === 1 && (await rows.first().getAttribute('data-pet-id')) === String(lizard.id))
      assert.equal(await rows.first().locator('td.pet-category').textContent(), 'Reptiles')
      await filters.getByLabel('Category').selectOption({ label: 'any' })

      // By name: fewer than 3 characters is no filter, and the form says so.
      await filters.getByLabel('Name contains').fill('Ze')
      assert.match((await filters.locator('#name-filter-note').textContent()) ?? '', /at least 3 characters/)
      await waitForAsync(async () => (await names()).includes('Lizzie'))
      await filters.getByLabel('Name contains').fill('zebrafinch')
      await waitForAsync(async () => (await rows.count()) === 20 && !(await names()).includes('Lizzie'))
      assert.equal(await rows.first().locator('td.pet-category').textContent(), 'Birds')
      // The next page is the same filter's (the cursor is bound to it).
      await pager.getByRole('button', { name: 'Next page' }).click()
      await waitForAsync(async () => (await rows.count()) === 3)
      assert.match(await names(), /^Zebrafinch \d+( \| Zebrafinch \d+){2}$/)
      assert.ok(apiCalls.some((call) => /^GET \/v1\/pets\?limit=20&q=zebrafinch&cursor=/.test(call)), apiCalls.join('\n'))
      // A new filter starts at its first page: category and name together.
      await filters.getByLabel('Category').selectOption({ label: 'Fish' })
      await waitForAsync(async () => (await rows.count()) === 0 && (await page.locator('table caption').textContent()) === '0 pets on this page')
      await filters.getByLabel('Category').selectOption({ label: 'Birds' })
      await waitForAsync(async () => (await rows.count()) === 20)
      assert.ok(apiCalls.includes('GET /v1/pets?limit=20&categoryId=3&q=zebrafinch'), apiCalls.join('\n'))
      assert.ok(await pager.getByRole('button', { name: 'Previous page' }).isDisabled())
      await expectNoAxeViolations('the pets page, filtered')

      // Two emoji are two characters, as the API counts them (not four UTF-16 units): too few, said so, and not sent.
      await filters.getByLabel('Name contains').fill('🐶🐶')
      assert.match((await filters.locator('#name-filter-note').textContent()) ?? '', /Type at least 3 characters/)
      await page.waitForTimeout(500) // past the typing pause
      assert.ok(!apiCalls.some((call) => call.includes('q=%F0')), apiCalls.join('\n'))

      // Categories are read once a session, not at each visit of the page: they are shared by every account.
      const categoryReads = () => apiCalls.filter((call) => call.startsWith('GET /v1/categories')).length
      const read = categoryReads()
      await open('Orders')
      await open('Pets')
      await filters.getByLabel('Category').selectOption({ label: 'Reptiles' })
      assert.equal(categoryReads(), read, apiCalls.join('\n'))
    })

    it('creates a key and shows its secret once; rolls it', async () => {
      await open('Keys')
      const form = page.getByRole('form', { name: 'Create a key' })
      await form.getByLabel('Name').fill('made in the console')
      await form.getByRole('checkbox', { name: 'orders:read' }).check()
      await form.getByRole('button', { name: 'Create key' }).click()
      const secret = (await page.getByTestId('secret').textContent()) ?? ''
      assert.match(secret, /^ps_/)
      assert.match((await page.getByRole('status').textContent()) ?? '', /will not be shown again/)
      await page.getByRole('button', { name: 'Copy the secret' }).click()
      assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), secret)
      assert.equal((await server.request('/v1/pets', { key: secret })).status, 200, 'the new key works')
      assert.equal((await server.request('/v1/pets', { method: 'POST', key: secret, json: { name: 'x', categoryId: 1 } })).status, 403, 'with the scopes chosen')
      // Shown once: a reload lists the key, never its secret.
      await page.reload()
      await page.getByRole('heading', { level: 1, name: 'Keys' }).waitFor()
      const row = page.locator('tr', { hasText: 'made in the console' })
      await row.waitFor()
      assert.equal(await page.getByTestId('secret').count(), 0)
      assert.ok(!((await page.content()).includes(secret)))
      await expectNoAxeViolations('the keys page')

      await row.getByRole('button', { name: /^Roll key/ }).click()
      const rolled = (await page.getByTestId('secret').textContent()) ?? ''
      assert.match(rolled, /^ps_/)
      assert.notEqual(rolled, secret)
      assert.equal((await server.request('/v1/pets', { key: rolled })).status, 200, 'the rolled key works')
      assert.equal((await server.request('/v1/pets', { key: secret })).status, 200, 'the old one too, for its grace period')
      // A key it did not make (the operator's, in the same account) it may not roll: no button (the API would answer 403).
      await server.createKey('pro', {}, { name: 'made by the operator', scopes: ['pets:read'], accountId: await server.accountId(key) })
      await page.reload()
      const operators = page.locator('tr', { hasText: 'made by the operator' })
      await operators.waitFor()
      assert.equal(await operators.getByRole('button', { name: /^Roll key/ }).count(), 0)
      assert.equal(await operators.getByRole('button', { name: /^Revoke key/ }).count(), 1, 'its other actions are there')
      assert.equal(await page.locator('tr', { hasText: 'console admin' }).getByRole('button', { name: /^Roll key/ }).count(), 1, 'itself it may roll')

      // The account's usage per key: the made key's requests above (two lists, one refused create).
      const made = (await server.request<{ prefix: string }[]>('/v1/keys?limit=100', { key })).body.find((k) => secret.startsWith(k.prefix))!
      await page.locator('tr', { hasText: made.prefix }).getByRole('button', { name: /^Usage of key/ }).click()
      await page.getByTestId('key-usage-forbidden').waitFor()
      assert.equal(await page.getByTestId('key-usage-ok').textContent(), '2')
      assert.equal(await page.getByTestId('key-usage-forbidden').textContent(), '1')
    })

    it('sends a test event to an endpoint on loopback, shows the delivery and redelivers it', async () => {
      await open('Webhooks')
      const form = page.getByRole('form', { name: 'Add an endpoint' })
      await form.getByLabel('URL').fill(receiver.url)
      await form.getByRole('button', { name: 'Add endpoint' }).click()
      await page.getByRole('status').filter({ hasText: 'whsec_' }).waitFor()
      const row = page.locator('tr', { hasText: receiver.url })
      await row.getByRole('button', { name: /^Send test to endpoint/ }).click()
      await page.getByRole('status').filter({ hasText: /^Test event evt_\d+ sent/ }).waitFor()
      await waitFor(() => receiver.received() >= 1)
      await row.getByRole('button', { name: /^Deliveries of endpoint/ }).click()
      const delivery = page.locator('tr.delivery').first()
      // Recorded after the receiver answered: refresh until it shows.
      for (let tries = 0; (await delivery.count()) === 0 && tries < 50; tries++) {
        await page.getByRole('button', { name: 'Refresh deliveries' }).click()
        await page.waitForTimeout(100)
      }
      assert.match((await delivery.textContent()) ?? '', /200/)
      await expectNoAxeViolations('the webhooks page')
      // An event the endpoint subscribes to (all), then its redelivery.
      await server.request('/v1/pets', { method: 'POST', key, json: { name: 'Announced', categoryId: 1 } })
      await waitFor(() => receiver.received() >= 2)
      await page.getByRole('button', { name: 'Refresh deliveries' }).click()
      const created = page.locator('tr.delivery', { hasText: 'scheduled' }).first()
      await created.waitFor()
      await created.getByRole('button', { name: /^Redeliver event/ }).click()
      await page.getByRole('status').filter({ hasText: /queued again for 1 endpoint/ }).waitFor()
      await waitFor(() => receiver.received() >= 3)
      // The event feed, each event's JSON a click away.
      const newest = page.locator('details.event').first()
      await newest.locator('summary').click()
      const event = JSON.parse((await newest.locator('pre').textContent()) ?? '') as { id: string; type: string; data: unknown }
      assert.match((await newest.locator('summary').textContent()) ?? '', new RegExp(`^${event.id} · ${event.type.replace('.', '\\.')} · `))
      assert.equal(typeof event.data, 'object')
    })

    it('edits an endpoint\'s events, rotates its secret, disables and deletes it', async () => {
      const row = page.locator('tr', { hasText: receiver.url })
      await row.getByRole('button', { name: /^Edit events of endpoint/ }).click()
      const form = page.getByRole('form', { name: /^Events of endpoint/ })
      await form.getByRole('checkbox', { name: 'all events' }).uncheck()
      await form.getByRole('checkbox', { name: 'order.placed' }).check()
      await form.getByRole('button', { name: 'Save events' }).click()
      await page.getByRole('status').filter({ hasText: 'now gets order.placed' }).waitFor()
      assert.equal(await row.locator('td:nth-child(3)').textContent(), 'order.placed')
      await row.getByRole('button', { name: /^Rotate secret of endpoint/ }).click()
      await page.getByRole('status').filter({ hasText: /New signing secret .*whsec_/ }).waitFor()
      await row.getByRole('button', { name: /^Disable endpoint/ }).click()
      await page.getByRole('status').filter({ hasText: /is disabled\.$/ }).waitFor()
      assert.equal(await row.locator('td:nth-child(4)').textContent(), 'disabled')
      await row.getByRole('button', { name: /^Delete endpoint/ }).click()
      await row.waitFor({ state: 'detached' })
      assert.deepEqual((await server.request<unknown[]>('/v1/webhook-endpoints', { key })).body, [])
    })

    it('shows when a failed delivery will be tried again', async () => {
      const failing = await startReceiver(503)
      try {
        const endpoint = (await server.request<{ id: number }>('/v1/webhook-endpoints', { method: 'POST', key, json: { url: failing.url, enabledEvents: ['pet.created'] } })).body
        await server.request('/v1/pets', { method: 'POST', key, json: { name: 'Unheard', categoryId: 1 } })
        await waitFor(() => failing.received() >= 1)
        await page.reload()
        await page.getByRole('button', { name: 'Sign out' }).waitFor()
        await page.locator('tr', { hasText: failing.url }).getByRole('button', { name: /^Deliveries of endpoint/ }).click()
        // Recorded after the receiver answered: refresh until it shows.
        const delivery = page.locator('tr.delivery').first()
        for (let tries = 0; (await delivery.count()) === 0 && tries < 50; tries++) {
          await page.getByRole('button', { name: 'Refresh deliveries' }).click()
          await page.waitForTimeout(100)
        }
        const [attempt] = (await server.request<DeliveryAttempt[]>(`/v1/webhook-endpoints/${endpoint.id}/deliveries`, { key })).body
        assert.equal(attempt?.responseStatus, 503)
        assert.ok(attempt.nextAttemptAt !== null && Date.parse(attempt.nextAttemptAt) > Date.parse(attempt.at), JSON.stringify(attempt))
        assert.match((await delivery.textContent()) ?? '', /503/)
        const shown = await page.evaluate<string>(`new Date(${JSON.stringify(attempt.nextAttemptAt)}).toLocaleString()`)
        assert.equal(await delivery.locator('td.next-retry').textContent(), shown)
        await expectNoAxeViolations('the webhooks page, a delivery to retry')
        await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { method: 'DELETE', key })
      } finally {
        await failing.close()
      }
    })

    it('charts the requests just made', async () => {
      await open('Overview')
      await page.locator('.uplot canvas').first().waitFor()
      const ok = Number(await page.getByTestId('total-ok').textContent())
      assert.ok(ok >= 10, `${ok} requests counted ok`)
      assert.ok(Number(await page.getByTestId('total-forbidden').textContent()) >= 0)
      assert.match((await page.getByTestId('usage-day').textContent()) ?? '', /^\d+ of \d+$/)
      await expectNoAxeViolations('the overview with its chart')
    })

    it('signs out: the key is forgotten', async () => {
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.getByLabel('API key').waitFor()
      assert.equal(await page.evaluate<string | null>("sessionStorage.getItem('petstore.apiKey')"), null)
    })

    it('shows a read_only key its writes disabled, naming the scope they need', async () => {
      const readOnly = await server.createKey('free', {}, { scopes: SCOPE_PRESETS.read_only, name: 'reader' })
      const refusedBefore = refusals403.length
      const callsBefore = apiCalls.length
      await signIn(readOnly)
      // GET /v1/account answers the key's scopes: nothing was refused to learn them.
      const scopes = (await page.getByTestId('scopes').textContent()) ?? ''
      assert.equal(scopes, SCOPE_PRESETS.read_only.join(', '))
      assert.match((await page.getByTestId('this-key').textContent()) ?? '', /^reader \(id \d+, ps_test_[\w-]{4}…\), never expires$/)
      assert.deepEqual(refusals403.slice(refusedBefore), [], 'no 403 to learn the scopes')
      assert.ok(!apiCalls.slice(callsBefore).some((call) => call.startsWith('GET /v1/keys')), 'nor a look through the keys')
      await open('Pets')
      const add = page.getByRole('form', { name: 'Add a pet' }).getByRole('button', { name: /Add pet/ })
      assert.ok(await add.isDisabled())
      assert.match((await add.textContent()) ?? '', /needs pets:write/)
      const edit = page.getByRole('button', { name: /^Edit / }).first()
      assert.ok(await edit.isDisabled())
      assert.match((await edit.getAttribute('title')) ?? '', /pets:write/)
      await expectNoAxeViolations('the pets page, read only')
      await open('Keys')
      assert.match((await page.locator('main').textContent()) ?? '', /needs the keys:read scope/)
      assert.deepEqual(refusals403.slice(refusedBefore), [], 'the console asked for nothing the key may not do')
      await page.getByRole('button', { name: 'Sign out' }).click()
    })

    it("offers a key the changes of an endpoint only when it may read every type it takes, as the API allows them", async () => {
      const accountId = await server.accountId(key)
      const hooks = await server.createKey('pro', {}, { scopes: ['webhooks:read', 'webhooks:write', 'pets:read'], name: 'hooks only', accountId })
      const made = await Promise.all(
        [['order.placed'], ['pet.created']].map(async (enabledEvents) => (await server.request<{ id: number }>('/v1/webhook-endpoints', { method: 'POST', key, json: { url: receiver.url, enabledEvents } })).body.id),
      )
      try {
        await signIn(hooks)
        await open('Webhooks')
        const row = (id: number) => page.locator(`tr[data-endpoint-id="${id}"]`)
        await row(made[0]!).waitFor()
        for (const name of [/^Edit events of endpoint/, /^Disable endpoint/, /^Rotate secret of endpoint/, /^Delete endpoint/]) {
          assert.equal(await row(made[0]!).getByRole('button', { name }).count(), 0, `${String(name)}: order events, which it may not read`)
          assert.equal(await row(made[1]!).getByRole('button', { name }).count(), 1, `${String(name)}: pet events`)
        }
        assert.equal(await row(made[0]!).getByRole('button', { name: /^Deliveries of endpoint/ }).count(), 1)
        await page.getByRole('button', { name: 'Sign out' }).click()
      } finally {
        for (const id of made) await server.request(`/v1/webhook-endpoints/${id}`, { method: 'DELETE', key })
      }
    })

    it('tells a banned key until when it is banned', async () => {
      const banned = await server.createKey('enterprise', { perMinute: 1, perDay: 1000 })
      // One served, then refused while limited until the ban (PETSTORE_BAN_AFTER refusals).
      let status = 0
      let retryAfter = 0
      for (let i = 0; i < 40 && status !== 429; i++) {
        const res = await server.request<{ code: string }>('/v1/pets', { key: banned })
        if (res.status === 429 && res.body.code === 'key_banned') {
          status = 429
          retryAfter = Number(res.headers.get('retry-after'))
        }
      }
      assert.equal(status, 429, 'the key was banned')
      // A banned key's every request, GET /v1/usage too, is 429 with Retry-After until the ban ends.
      const bannedUntil = new Date(Date.now() + retryAfter * 1000).toISOString()
      await page.goto(`${server.url}/console`)
      await page.getByLabel('API key').fill(banned)
      await page.keyboard.press('Enter')
      const alert = page.getByRole('alert')
      await alert.waitFor()
      assert.match((await alert.textContent()) ?? '', /This key is banned until .+\. Try again then\./)
      assert.ok(Date.parse(bannedUntil) > Date.now())
    })

    it('signs in and moves between pages with the keyboard alone', async () => {
      await page.goto(`${server.url}/console`)
      await page.keyboard.press('Tab')
      assert.equal(await page.evaluate<string | undefined>('document.activeElement?.id'), 'api-key')
      await page.keyboard.type(key)
      await page.keyboard.press('Tab')
      await page.keyboard.press('Enter')
      await page.getByRole('button', { name: 'Sign out' }).waitFor()
      // The first stop is the first page link; Tab to "Orders" and follow it.
      for (let i = 0; i < 3; i++) await page.keyboard.press('Tab')
      assert.equal(await page.evaluate<string | undefined>('document.activeElement?.textContent'), 'Orders')
      await page.keyboard.press('Enter')
      await page.getByRole('heading', { level: 1, name: 'Orders' }).waitFor()
      await page.getByRole('button', { name: 'Sign out' }).click()
    })

    it('loaded everything from this server and needed nothing the CSP refused', () => {
      assert.deepEqual(elsewhere, [])
      // The API's refusals (the blank name, the wrong key, the 412, the ban) are logged by
      // the browser as failed loads; anything else (a 403, a CSP refusal, an error) is a fault.
      assert.deepEqual(refusals403, [])
      assert.deepEqual(
        problems.filter((p) => !/^Failed to load resource: the server responded with a status of 4(00|01|12|29)/.test(p)),
        [],
      )
    })
  })
}

async function waitFor(condition: () => boolean, timeoutMs = 10_000) {
  await waitForAsync(async () => condition(), timeoutMs)
}

async function waitForAsync(condition: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** A GET whose body is left as it came (no decoding), with its Content-Encoding. */
function rawGet(url: string, headers: Record<string, string>): Promise<{ encoding: string | undefined; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }))
      res.on('error', reject)
    }).on('error', reject)
  })
}
