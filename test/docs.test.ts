// GET /docs, the API reference page: over HTTP (public, no rate limit, a strict
// Content-Security-Policy, JSON 404s below it), then in a real Chromium: the page
// shows the operations, the deprecation, the plans and the error codes, a pasted key
// authorizes "Try it out" against this server, and no request leaves for another host.
import { existsSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { chromium, type Browser, type Page, type Request } from 'playwright-core'
import { PLAN_LIMITS } from '../src/vocabulary/plans.js'
import { ERROR_CODES } from '../src/errors.js'
import { rawHttp } from './helpers/raw-http.js'
import type { Pet } from '../src/schemas/pet.js'
import { V1_OPERATIONS } from './helpers/operations.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { runOrSkip } from './helpers/services.js'

const CHROMIUM = '/usr/bin/chromium'
// Without the background-networking flags Chromium calls Google's hosts on its own.
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

describe('GET /docs over HTTP', () => {
  let server: TestServer
  before(async () => {
    server = await startTestServer()
  })
  after(() => server.close())

  it('serves the page without a key, counted as keyless requests are (the free plan\'s limit, by address)', async () => {
    const res = await server.request('/docs')
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/)
    assert.equal(res.headers.get('x-ratelimit-limit'), String(PLAN_LIMITS.free.perMinute))
    assert.match(res.text, /<title>Pet Store API reference<\/title>/)
  })

  it('answers the document from memory: compressed, with an ETag, 304 when unchanged', async () => {
    for (const path of ['/docs/json', '/v1/openapi.json']) {
      const raw = (headers: Record<string, string>) => rawHttp(server.url, `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`, { halfClose: false })
      const plain = await server.request(path)
      const etag = plain.headers.get('etag')
      assert.match(etag ?? '', /^"[A-Za-z0-9_-]+"$/, path)
      assert.equal(plain.headers.get('vary'), 'accept-encoding')
      const br = await raw({ 'Accept-Encoding': 'gzip, br' })
      assert.match(br, /\r\ncontent-encoding: br\r\n/i, path)
      const length = Number(/\r\ncontent-length: (\d+)\r\n/i.exec(br)?.[1])
      assert.ok(length > 0 && length < Buffer.byteLength(plain.text) / 5, `${path}: ${length} bytes in brotli of ${Buffer.byteLength(plain.text)}`)
      assert.match(await raw({ 'Accept-Encoding': 'gzip' }), /\r\ncontent-encoding: gzip\r\n/i, path)
      assert.doesNotMatch(await raw({}), /\r\ncontent-encoding:/i, `${path}: identity when nothing is accepted`)
      const unchanged = await server.request(path, { headers: { 'if-none-match': etag! } })
      assert.equal(unchanged.status, 304, path)
      assert.equal(unchanged.text, '')
      assert.equal((await server.request(path, { headers: { 'if-none-match': '"other"' } })).status, 200)
    }
  })

  it('refuses the docs past the free plan\'s limit per address, 429 as any keyless request', async () => {
    const limited = await startTestServer()
    try {
      let res
      for (let i = 0; i <= PLAN_LIMITS.free.perMinute; i++) res = await limited.request(i % 2 ? '/docs/json' : '/docs')
      assert.equal(res!.status, 429, res!.text)
      assert.equal((res!.body as { code: string }).code, 'rate_limited')
      assert.ok(Number(res!.headers.get('retry-after')) > 0)
    } finally {
      await limited.close()
    }
  })

  it('sends a Content-Security-Policy that allows this origin only, and is neither framed, nor sniffed, nor sends a referrer, nor opened with a handle kept', async () => {
    const page = await server.request('/docs')
    assert.deepEqual(['x-frame-options', 'referrer-policy', 'x-content-type-options', 'cross-origin-opener-policy'].map((name) => page.headers.get(name)), ['DENY', 'no-referrer', 'nosniff', 'same-origin'])
    const csp = page.headers.get('content-security-policy') ?? ''
    assert.match(csp, /default-src 'none'/)
    assert.match(csp, /script-src 'self'(;|$)/)
    assert.match(csp, /connect-src 'self'(;|$)/)
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/)
  })

  it('gives the page the OpenAPI document with this server first', async () => {
    type Doc = { servers: { url: string; description: string }[]; paths: unknown }
    const page = (await server.request<Doc>('/docs/json')).body
    const canonical = (await server.request<Doc>('/v1/openapi.json')).body
    assert.deepEqual(page.servers, [{ url: '/v1', description: 'This server' }, ...canonical.servers])
    assert.deepEqual({ ...page, servers: canonical.servers }, canonical)
  })

  it('sends /docs/static/index.html, with a query or without, to /docs/ once: it redirected to itself without end', async () => {
    for (const path of ['/docs/static/index.html', '/docs/static/index.html?a=1']) {
      const res = await server.request(path, { redirect: 'manual' })
      assert.equal(res.status, 302, path)
      assert.equal(res.headers.get('location'), '/docs/', path)
    }
  })

  it('answers the JSON Error 404 for unknown paths under /docs', async () => {
    for (const path of ['/docs/nope', '/docs/static/nope.js', '/docs/yaml', '/docs/static/%2e%2e/%2e%2e/package.json', '/docs/static/%00']) {
      const res = await server.request<{ code: string; status: number }>(path)
      assert.equal(res.status, 404, path)
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
      assert.equal(res.body.code, 'not_found')
    }
  })
})

const BROWSER_SUITE = 'the docs page in a browser'

describe(BROWSER_SUITE, { skip: !runOrSkip(existsSync(CHROMIUM), BROWSER_SUITE, `chromium is not installed at ${CHROMIUM}`) }, () => {
  let server: TestServer
  let browser: Browser
  let page: Page
  let key: string
  const requests: Request[] = []
  const problems: string[] = []

  before(async () => {
    server = await startTestServer()
    key = await server.createKey('free')
    await server.request('/v1/pets', { method: 'POST', key, json: { name: 'Biscuit', categoryId: 1 } })
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS })
    page = await browser.newPage({ viewport: { width: 1280, height: 1600 } })
    page.setDefaultTimeout(15_000)
    page.on('request', (request) => requests.push(request))
    // A CSP refusal shows up as a console error: the page must need nothing refused.
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text())
    })
    page.on('pageerror', (error) => problems.push(error.message))
    await page.goto(`${server.url}/docs`)
    await page.locator('.opblock').first().waitFor()
  })

  after(async () => {
    await browser?.close()
    await server?.close()
  })

  const operation = (operationId: string) => page.locator(`#operations-pets-${operationId}`)

  async function tryItOut(operationId: string) {
    const op = operation(operationId)
    await op.locator('.opblock-summary-control').click()
    await op.locator('.try-out__btn').click()
    return op
  }

  async function execute(operationId: string, method: string) {
    const op = operation(operationId)
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().startsWith(`${server.url}/v1/pets`) && r.request().method() === method),
      op.locator('.btn.execute').click(),
    ])
    const status = op.locator('.live-responses-table .response .response-col_status').first()
    await status.waitFor()
    return { response, status: (await status.textContent())?.trim(), body: (await op.locator('.live-responses-table .response-col_description pre').first().textContent()) ?? '' }
  }

  it('shows listPets, createPet, getPet and the store operations', async () => {
    const ids = await page.locator('.opblock .opblock-summary-operation-id').allTextContents()
    assert.deepEqual(ids.sort(), V1_OPERATIONS.map((o) => o.operationId).sort())
  })

  it('shows getPet as deprecated, with its sunset date', async () => {
    const getPet = operation('getPet')
    assert.match((await getPet.getAttribute('class')) ?? '', /\bopblock-deprecated\b/)
    assert.ok(await page.locator('.info').getByText('5 December 2030').isVisible(), 'the sunset date is in the description')
    await getPet.locator('.opblock-summary-control').click()
    await getPet.getByText('Warning: Deprecated').waitFor()
    assert.ok(await getPet.getByText(/removed on 5 December 2030/).isVisible())
  })

  it('shows the plans, the rate-limit headers and every error code', async () => {
    const info = page.locator('.info')
    const text = (await info.textContent()) ?? ''
    for (const row of ['free', 'pro', 'business', 'enterprise']) {
      assert.ok(await info.locator('table tr', { hasText: row }).first().isVisible(), `plan ${row}`)
    }
    for (const header of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit-Policy', 'Retry-After']) {
      assert.ok(text.includes(header), header)
    }
    const errors = info.locator('p', { hasText: 'Errors always have' })
    for (const code of ERROR_CODES) assert.ok(await errors.locator('code', { hasText: new RegExp(`^${code}$`) }).isVisible(), code)
  })

  it('takes a pasted key through the Authorize dialog', async () => {
    await page.locator('.scheme-container .btn.authorize').click()
    const dialog = page.locator('.modal-ux')
    await dialog.locator('input').fill(key)
    await dialog.locator('.auth-btn-wrapper .btn.authorize').click()
    await dialog.locator('.auth-btn-wrapper .btn-done').click()
    await page.locator('.scheme-container .btn.authorize.locked').waitFor()
  })

  it('runs listPets from the page against this server: 200 with the pets', async () => {
    await tryItOut('listPets')
    const { response, status, body } = await execute('listPets', 'GET')
    assert.equal(response.url(), `${server.url}/v1/pets?limit=20`)
    assert.equal(response.request().headers().authorization, `Bearer ${key}`)
    assert.equal(status, '200')
    assert.match(body, /"name": "Biscuit"/)
  })

  it('runs createPet from the page: 201 and the pet is stored', async () => {
    const op = await tryItOut('createPet')
    await op.locator('textarea.body-param__text').fill(JSON.stringify({ name: 'Pasted', categoryId: 2 }))
    const { response, status, body } = await execute('createPet', 'POST')
    assert.equal(response.url(), `${server.url}/v1/pets`)
    assert.equal(status, '201')
    const created = JSON.parse(body) as Pet
    assert.equal(created.name, 'Pasted')
    assert.equal((await server.request<Pet>(`/v1/pets/${created.id}`, { key })).body.name, 'Pasted')
  })

  it('loaded everything from this server and needed nothing the CSP refused', async () => {
    // DOCS_SCREENSHOT=path.png keeps a picture of the page as the tests left it.
    if (process.env.DOCS_SCREENSHOT) await page.screenshot({ path: process.env.DOCS_SCREENSHOT, fullPage: true })
    assert.ok(requests.length >= 5, 'the page, its scripts and styles, the document and the tries were recorded')
    const elsewhere = requests.map((r) => r.url()).filter((url) => !['data:', 'blob:'].includes(new URL(url).protocol) && new URL(url).origin !== server.url)
    assert.deepEqual(elsewhere, [])
    assert.deepEqual(problems, [])
  })
})
