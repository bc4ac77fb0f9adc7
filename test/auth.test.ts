import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { connect } from 'node:net'
import { createManualClock } from '../src/clock.js'
import { generateApiKey } from '../src/api-keys/key-format.js'
import { main } from '../src/cli/main.js'
import { V1_OPERATIONS } from './helpers/operations.js'
import { rawRows } from './helpers/raw-rows.js'
import { STORES, startTestServer, type Reply, type TestServer } from './helpers/server.js'

function assertUnauthorized(res: Reply, message: RegExp, challenge = 'Bearer realm="petstore", error="invalid_token"') {
  assert.equal(res.status, 401)
  assert.deepEqual(Object.keys(res.body as object), ['code', 'message', 'status'])
  assert.equal((res.body as { code: string }).code, 'unauthorized')
  assert.match((res.body as { message: string }).message, message)
  assert.equal(res.headers.get('www-authenticate'), challenge)
}

for (const store of STORES) describe(`authentication (${store})`, () => {
  const clock = createManualClock('2026-11-22T12:00:00Z')
  let server: TestServer
  let key: string
  before(async () => {
    server = await startTestServer({ store, clock })
    key = await server.createKey()
  })
  after(() => server.close())

  for (const { operationId, method, example, body } of V1_OPERATIONS) {
    it(`${operationId} (${method} ${example}) answers 401 with WWW-Authenticate: Bearer when the key is missing`, async () => {
      assertUnauthorized(await server.request(example, { method, json: body }), /Missing API key/, 'Bearer realm="petstore"')
    })
  }

  it('marks every /v1 answer no-store and nosniff, keyed or not, so no browser cache keeps an account\'s data past a sign-out; openapi.json keeps its own', async () => {
    // A server of its own: the requests without a key would use up this address's budget for the tests after.
    const own = await startTestServer({ store, clock })
    try {
      const ownKey = await own.createKey()
      assert.equal((await own.request('/v1/openapi.json')).headers.get('cache-control'), 'no-cache')
      for (const { operationId, method, example, body } of V1_OPERATIONS) {
        for (const res of [await own.request(example, { method, json: body, key: ownKey }), await own.request(example, { method, json: body })]) {
          assert.equal(res.headers.get('cache-control'), 'no-store', `${operationId}: ${res.status}`)
          assert.equal(res.headers.get('x-content-type-options'), 'nosniff', operationId)
        }
      }
    } finally {
      await own.close()
    }
  })

  it('tells a client that sent its key in the URL that it is not read there, and where it goes', async () => {
    for (const path of [`/v1/pets?api_key=${key}`, `/v1/pets?access_token=${key}`, `/v1/pets?limit=2&key=${key}`]) {
      assertUnauthorized(await server.request(path), /a key in the URL is not read .*"Authorization: Bearer <key>"/, 'Bearer realm="petstore"')
    }
    assertUnauthorized(await server.request('/v1/pets?limit=2'), /^Missing API key: send it as/, 'Bearer realm="petstore"')
  })

  it('accepts the Bearer scheme in any case (RFC 9110)', async () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
      const res = await server.request('/v1/pets', { headers: { authorization: `${scheme} ${key}` } })
      assert.equal(res.status, 200, scheme)
    }
  })

  it('refuses other schemes and a bare key', async () => {
    assertUnauthorized(await server.request('/v1/pets', { headers: { authorization: `Basic ${key}` } }), /Bearer <key>/)
    assertUnauthorized(await server.request('/v1/pets', { headers: { authorization: key } }), /Bearer <key>/)
    assertUnauthorized(await server.request('/v1/pets', { headers: { authorization: 'Bearer' } }), /Bearer <key>/)
  })

  it('refuses a request with two Authorization headers, whichever keys they hold: a proxy may read the other one', async () => {
    const other = await server.createKey()
    const { port } = new URL(server.url)
    const text = await new Promise<string>((resolve, reject) => {
      let answer = ''
      const socket = connect(Number(port), '127.0.0.1', () =>
        socket.write(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nauthorization: Bearer ${other}\r\nConnection: close\r\n\r\n`),
      )
      socket.on('data', (chunk) => (answer += chunk.toString()))
      socket.on('end', () => resolve(answer))
      socket.on('error', reject)
    })
    const [head = '', body = ''] = text.split('\r\n\r\n')
    assert.match(head, /^HTTP\/1\.1 401 /)
    assert.match(head, /\r\nwww-authenticate: Bearer realm="petstore", error="invalid_token"/i)
    assert.match((JSON.parse(body) as { message: string }).message, /sent more than once/)
    assert.equal((await server.request('/v1/pets', { key })).status, 200, 'each alone is served')
  })

  it('refuses a malformed key, and a mistyped one by its checksum', async () => {
    assertUnauthorized(await server.request('/v1/pets', { key: 'hunter2' }), /malformed/)
    const typo = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a')
    assertUnauthorized(await server.request('/v1/pets', { key: typo }), /malformed/)
  })

  it('refuses a well-formed key it never issued', async () => {
    assertUnauthorized(await server.request('/v1/pets', { key: generateApiKey('test') }), /not recognised/)
  })

  it('refuses a key of the other environment, saying so', async () => {
    assertUnauthorized(await server.request('/v1/pets', { key: generateApiKey('live') }), /live key.*accepts test keys/)
  })

  it('refuses a revoked key within 5 seconds on a running server', async () => {
    const doomed = await server.createKey()
    assert.equal((await server.request('/v1/pets', { key: doomed })).status, 200)
    await server.store.apiKeys.revoke(await server.keyId(doomed), clock.now(), false)
    clock.advance(5_000)
    assertUnauthorized(await server.request('/v1/pets', { key: doomed }), /revoked/, 'Bearer realm="petstore", error="invalid_token", error_description="The API key has been revoked"')
  })

  /** Runs `body` counting the store's key lookups (a request's, and the refreshes no request waits for); resolves once every lookup it started has settled. */
  async function lookupsDuring(body: () => Promise<void>): Promise<number> {
    const started: Promise<unknown>[] = []
    const parts = [server.store.apiKeys, server.store.background.apiKeys]
    const originals = parts.map((apiKeys) => apiKeys.findByHash)
    parts.forEach((apiKeys, i) => {
      apiKeys.findByHash = (hash) => {
        const found = originals[i]!.call(apiKeys, hash)
        started.push(found)
        return found
      }
    })
    try {
      await body()
      await Promise.allSettled(started)
    } finally {
      parts.forEach((apiKeys, i) => (apiKeys.findByHash = originals[i]!))
    }
    return started.length
  }

  it('looks a key up once for all the requests that find it uncached together', async () => {
    const fresh = await server.createKey()
    const lookups = await lookupsDuring(async () => {
      const answers = await Promise.all(Array.from({ length: 20 }, () => server.request('/v1/pets', { key: fresh })))
      assert.deepEqual(new Set(answers.map((res) => res.status)), new Set([200]))
    })
    assert.equal(lookups, 1)
  })

  it('looks a key in use up again before its cache entry expires, so no request waits for the store', async () => {
    const busy = await server.createKey()
    const first = await lookupsDuring(async () => {
      assert.equal((await server.request('/v1/pets', { key: busy })).status, 200)
    })
    assert.equal(first, 1, 'the first request looks the key up')
    clock.advance(2_100) // within a second of the entry's 3 s lifetime
    const refreshed = await lookupsDuring(async () => {
      assert.equal((await server.request('/v1/pets', { key: busy })).status, 200)
    })
    assert.equal(refreshed, 1, 'a request near the end of the entry starts a refresh')
    clock.advance(1_400) // past the first entry's end, within the refreshed one
    const later = await lookupsDuring(async () => {
      assert.equal((await server.request('/v1/pets', { key: busy })).status, 200)
    })
    assert.equal(later, 0, 'served from the refreshed entry')
  })

  it('stores only the SHA-256 of each key and its display prefix, never the key itself', async () => {
    const rows = await rawRows(server.config.databaseUrl, 'api_keys')
    const row = rows.find((r) => r.key_hash === createHash('sha256').update(key).digest('hex'))
    assert.ok(row, 'a row holds the SHA-256 (hex) of the key')
    assert.ok(key.startsWith(String(row.prefix)), 'the prefix is the start of the key')
    const secretPart = key.slice(String(row.prefix).length)
    assert.ok(secretPart.length >= 32, 'the prefix gives away at most a few characters of the secret')
    for (const r of rows) {
      for (const [column, value] of Object.entries(r)) assert.ok(!String(value).includes(secretPart), `column ${column} holds none of the key past its prefix`)
    }
  })
})

for (const store of STORES) describe(`production accepts live keys only (${store})`, () => {
  let server: TestServer
  before(async () => {
    server = await startTestServer({ store, env: { PETSTORE_ENV: 'production' } })
  })
  after(() => server.close())

  it('serves a ps_live_ key and refuses a ps_test_ one', async () => {
    const live = await server.createKey()
    assert.match(live, /^ps_live_/)
    assert.equal((await server.request('/v1/pets', { key: live })).status, 200)
    assertUnauthorized(await server.request('/v1/pets', { key: generateApiKey('test') }), /test key.*accepts live keys/)
  })
})

for (const store of STORES) describe(`a key made with the command line (${store})`, () => {
  let server: TestServer
  before(async () => {
    server = await startTestServer({ store })
  })
  after(() => server.close())

  it('works against a running server at once', async () => {
    const lines: string[] = []
    const code = await main(['keys', 'create', '--plan', 'free'], { out: (l) => lines.push(l), err: (l) => lines.push(l) }, {
      DATABASE_URL: server.config.databaseUrl,
    })
    assert.equal(code, 0)
    assert.equal((await server.request('/v1/pets', { key: lines[0] })).status, 200)
  })
})
