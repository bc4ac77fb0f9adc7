// Responses above 1 KiB are compressed for clients that accept it, and only for them;
// request bodies are never decompressed. Raw HTTP (node:http), because fetch would
// decompress behind the test's back.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib'
import { startTestServer, type TestServer } from './helpers/server.js'

interface RawReply {
  status: number
  headers: IncomingHttpHeaders
  body: Buffer
}

describe('response compression', () => {
  let server: TestServer
  let key: string

  before(async () => {
    server = await startTestServer()
    key = await server.createKey('business')
    for (let i = 0; i < 20; i++) await server.request('/v1/pets', { method: 'POST', key, json: { name: `Compressible ${i}`, categoryId: 1 } })
  })
  after(() => server.close())

  function raw(path: string, headers: Record<string, string>, body?: Buffer): Promise<RawReply> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(`${server.url}${path}`, { method: body ? 'POST' : 'GET', headers: { authorization: `Bearer ${key}`, ...headers } }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
      })
      req.on('error', reject)
      req.end(body)
    })
  }

  it('sends openapi.json gzipped to a client that accepts gzip, the same document once inflated', async () => {
    const plain = await raw('/v1/openapi.json', {})
    assert.equal(plain.headers['content-encoding'], undefined)
    assert.ok(plain.body.length > 50_000)
    const gzipped = await raw('/v1/openapi.json', { 'accept-encoding': 'gzip' })
    assert.equal(gzipped.status, 200)
    assert.equal(gzipped.headers['content-encoding'], 'gzip')
    assert.match(String(gzipped.headers.vary), /accept-encoding/i)
    assert.ok(gzipped.body.length < plain.body.length / 4, `${gzipped.body.length} of ${plain.body.length} bytes`)
    assert.deepEqual(JSON.parse(gunzipSync(gzipped.body).toString('utf8')), JSON.parse(plain.body.toString('utf8')))
  })

  it('prefers brotli when both are accepted, and compresses a page of pets', async () => {
    const plain = await raw('/v1/pets?limit=15', {})
    assert.ok(plain.body.length > 1024, `a page of 20 is ${plain.body.length} bytes`)
    assert.equal(plain.headers['content-encoding'], undefined)
    const br = await raw('/v1/pets?limit=15', { 'accept-encoding': 'gzip, br' })
    assert.equal(br.headers['content-encoding'], 'br')
    assert.deepEqual(JSON.parse(brotliDecompressSync(br.body).toString('utf8')), JSON.parse(plain.body.toString('utf8')))
    // The headers that matter to a client survive: the rate limit, the request id, the page links.
    for (const name of ['ratelimit', 'x-request-id', 'link']) assert.ok(br.headers[name], name)
  })

  it('sends a page of pets gzipped to a gzip-only client, with Vary on every variant', async () => {
    const plain = await raw('/v1/pets?limit=15', {})
    assert.match(String(plain.headers.vary), /accept-encoding/i, 'the identity answer varies by Accept-Encoding too')
    const gzipped = await raw('/v1/pets?limit=15', { 'accept-encoding': 'gzip' })
    assert.equal(gzipped.headers['content-encoding'], 'gzip')
    assert.match(String(gzipped.headers.vary), /accept-encoding/i)
    assert.equal(Number(gzipped.headers['content-length']), gzipped.body.length)
    assert.deepEqual(JSON.parse(gunzipSync(gzipped.body).toString('utf8')), JSON.parse(plain.body.toString('utf8')))
    const refused = await raw('/v1/pets?limit=15', { 'accept-encoding': 'br;q=0, gzip;q=0' })
    assert.equal(refused.headers['content-encoding'], undefined)
    assert.deepEqual(refused.body, plain.body)
  })

  it('never sends a compressed page older than the pets: a change shows in the next compressed answer', async () => {
    const before = await raw('/v1/pets?limit=15', { 'accept-encoding': 'br' })
    const pets = JSON.parse(brotliDecompressSync(before.body).toString('utf8')) as { id: number; name: string }[]
    const changed = await server.request(`/v1/pets/${pets[3]!.id}`, { method: 'PATCH', key, json: { name: 'Renamed while compressed' } })
    assert.equal(changed.status, 200)
    const after = await raw('/v1/pets?limit=15', { 'accept-encoding': 'br' })
    assert.equal(after.headers['content-encoding'], 'br')
    const now = JSON.parse(brotliDecompressSync(after.body).toString('utf8')) as { id: number; name: string }[]
    assert.equal(now[3]!.name, 'Renamed while compressed')
    assert.deepEqual(now, JSON.parse((await raw('/v1/pets?limit=15', {})).body.toString('utf8')))
  })

  it('compresses the other lists too (a page of orders), and never one object (the inventory)', async () => {
    const pets = JSON.parse((await raw('/v1/pets?limit=20', {})).body.toString('utf8')) as { id: number }[]
    for (const { id } of pets) assert.equal((await server.request('/v1/store/orders', { method: 'POST', key, json: { petId: id } })).status, 201)
    const plain = await raw('/v1/store/orders?limit=20', {})
    assert.ok(plain.body.length > 1024, `a page of 20 orders is ${plain.body.length} bytes`)
    const gzipped = await raw('/v1/store/orders?limit=20', { 'accept-encoding': 'gzip' })
    assert.equal(gzipped.headers['content-encoding'], 'gzip')
    assert.deepEqual(JSON.parse(gunzipSync(gzipped.body).toString('utf8')), JSON.parse(plain.body.toString('utf8')))
    const inventory = await raw('/v1/store/inventory', { 'accept-encoding': 'gzip' })
    assert.equal(inventory.headers['content-encoding'], undefined)
  })

  it('leaves responses under 1 KiB alone, and errors too', async () => {
    const small = await raw('/v1/pets?limit=1', { 'accept-encoding': 'gzip' })
    assert.equal(small.headers['content-encoding'], undefined)
    assert.equal(Number(small.headers['content-length']), small.body.length)
    const error = await raw('/v1/pets?limit=0', { 'accept-encoding': 'gzip' })
    assert.equal(error.status, 400)
    assert.equal(error.headers['content-encoding'], undefined)
  })

  it('does not decompress a request body: a gzipped POST is refused, never inflated', async () => {
    const body = gzipSync(JSON.stringify({ name: 'Zipped', categoryId: 1 }))
    const res = await raw('/v1/pets', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body)
    assert.equal(res.status, 415)
    const error = JSON.parse(res.body.toString('utf8')) as { code: string; message: string }
    assert.equal(error.code, 'unsupported_media_type')
    assert.match(error.message, /Content-Encoding gzip/)
    // RFC 9110 §15.5.16: a 415 for a content coding names the codings accepted.
    assert.equal(res.headers['accept-encoding'], 'identity')
  })
})
