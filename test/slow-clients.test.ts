// Slow and greedy clients, on raw sockets against a real server with short timeouts
// (the same settings as PETSTORE_HEADERS_TIMEOUT=10, PETSTORE_REQUEST_TIMEOUT=30 in
// production, scaled down): headers dripped past their limit get a 408 at that limit,
// not at Node's next 30-second check; a body dripped past the request timeout too;
// the socket is then closed both ways, not half-closed; an idle keep-alive connection
// closes after its timeout; a body on GET is refused before it is read; and an address
// cannot hold more connections than PETSTORE_MAX_CONNECTIONS_PER_IP.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { UNLIMITED } from './helpers/keys.js'
import { LINGER_BYTES, LINGER_MS } from '../src/plugins/json-body.js'
import { floodBodyInThread, parseRawAnswer } from './helpers/raw-http.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const HEADERS_TIMEOUT_S = 1
const REQUEST_TIMEOUT_S = 3
const KEEP_ALIVE_TIMEOUT_S = 1
const MAX_CONNECTIONS = 5

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Watched {
  socket: Socket
  /** Everything the server wrote so far. */
  answer(): string
  /** Resolves with the ms since it opened when the server closed its side (FIN or RST). */
  closed: Promise<number>
}

function open(server: TestServer): Promise<Watched> {
  const { port } = new URL(server.url)
  return new Promise((resolve, reject) => {
    const started = performance.now()
    // allowHalfOpen: the client does not close its side when the server closes its own,
    // as an attacker's would not; 'close' then means the server closed the socket whole.
    const socket = connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true }, () => resolve({ socket, answer: () => text, closed }))
    let text = ''
    socket.on('data', (chunk) => (text += chunk.toString()))
    // The server may close while the client still writes: that is the point.
    socket.on('error', () => {})
    socket.once('error', reject)
    const closed = new Promise<number>((done) => {
      socket.once('end', () => done(performance.now() - started))
      socket.once('close', () => done(performance.now() - started))
    })
  })
}

/** Writes `line` every `everyMs` until the socket closes or `stop` says so. */
async function drip(watched: Watched, line: () => string, everyMs: number, until: number) {
  const deadline = performance.now() + until
  while (!watched.socket.destroyed && performance.now() < deadline) {
    watched.socket.write(line())
    await sleep(everyMs)
  }
}

describe('slow and greedy clients', { timeout: 60_000 }, () => {
  let server: TestServer
  let key: string

  /**
   * Asserts that the server holds no connection open (not even half-closed) within `ms`:
   * one closed before its request's body was read is held at most LINGER_MS, for a client
   * that neither closes nor stops sending.
   */
  async function assertNoneOpen(ms = 500) {
    const count = () => new Promise<number>((resolve, reject) => server.app.server.getConnections((error, n) => (error ? reject(error) : resolve(n))))
    const deadline = performance.now() + ms
    while ((await count()) > 0 && performance.now() < deadline) await sleep(20)
    assert.equal(await count(), 0, 'sockets the server still holds')
  }
  before(async () => {
    server = await startTestServer({
      env: {
        PETSTORE_HEADERS_TIMEOUT: String(HEADERS_TIMEOUT_S),
        PETSTORE_REQUEST_TIMEOUT: String(REQUEST_TIMEOUT_S),
        PETSTORE_KEEP_ALIVE_TIMEOUT: String(KEEP_ALIVE_TIMEOUT_S),
        PETSTORE_MAX_CONNECTIONS_PER_IP: String(MAX_CONNECTIONS),
      },
    })
    key = await server.createKey('enterprise', UNLIMITED)
  })
  after(() => server.close())

  it('answers headers dripped past the headers timeout 408 within a second of it, and closes the socket', async () => {
    const sockets = await Promise.all(Array.from({ length: 4 }, () => open(server)))
    for (const s of sockets) s.socket.write('GET /v1/pets HTTP/1.1\r\nHost: x\r\n')
    await Promise.all(sockets.map((s) => drip(s, () => `X-Drip: ${Date.now()}\r\n`, 200, 10_000)))
    const times = await Promise.all(sockets.map((s) => s.closed))
    for (const [i, s] of sockets.entries()) {
      assert.equal(parseRawAnswer(s.answer()).status, 408, s.answer())
      assert.ok(times[i]! < (HEADERS_TIMEOUT_S + 1.5) * 1000, `closed after ${Math.round(times[i]!)} ms`)
    }
    await assertNoneOpen()
  })

  it('answers a body dripped past the request timeout 408 within a second of it, and closes the socket', async () => {
    const s = await open(server)
    s.socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":"`)
    await drip(s, () => 'a', 200, 10_000)
    const time = await s.closed
    assert.equal(parseRawAnswer(s.answer()).status, 408, s.answer())
    assert.ok(time > (REQUEST_TIMEOUT_S - 0.5) * 1000 && time < (REQUEST_TIMEOUT_S + 1.5) * 1000, `closed after ${Math.round(time)} ms`)
    await assertNoneOpen()
  })

  it('answers a body still arriving at the request deadline 408 (nothing was done), not a write\'s 503 outcome_unknown', async () => {
    const hurried = await startTestServer({ env: { PETSTORE_REQUEST_DEADLINE: '1', PETSTORE_REQUEST_TIMEOUT: '30' } })
    try {
      const hurriedKey = await hurried.createKey('enterprise', UNLIMITED)
      const s = await open(hurried)
      s.socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${hurriedKey}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":"`)
      await drip(s, () => 'a', 200, 5_000)
      const answer = parseRawAnswer(s.answer())
      assert.equal(answer.status, 408, s.answer())
      assert.match(s.answer(), /"code":"request_timeout"/)
      assert.match(s.answer(), /did not arrive within 1 s; nothing was done/)
    } finally {
      await hurried.close()
    }
  })

  it('closes an idle keep-alive connection after its timeout', async () => {
    const s = await open(server)
    s.socket.write(`GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`)
    const time = await s.closed
    assert.equal(parseRawAnswer(s.answer().split('\r\n\r\n').slice(0, 2).join('\r\n\r\n')).status, 200)
    // Node adds a second to the keep-alive timeout (keepAliveTimeoutBuffer) for clients racing it.
    assert.ok(time < (KEEP_ALIVE_TIMEOUT_S + 1.5) * 1000, `closed after ${Math.round(time)} ms`)
    await assertNoneOpen()
  })

  it('refuses 64 MB chunked GETs 413 before reading them; the client, still sending, reads the answer whole, then the socket closes', async () => {
    const reads: Socket[] = []
    const onConnection = (socket: Socket) => reads.push(socket)
    server.app.server.on('connection', onConnection)
    try {
      // Several times: the reset that lost the answer came in a race with the client's reads.
      for (let i = 0; i < 5; i++) {
        const { answer, ms, sent, error } = await floodBodyInThread(server.url, `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nTransfer-Encoding: chunked\r\n\r\n`)
        const refused = parseRawAnswer(answer)
        assert.equal(refused.status, 413, `attempt ${i + 1}: ${error ?? ''} ${answer.slice(0, 300)}`)
        assert.equal((refused.body as { code: string }).code, 'payload_too_large')
        assert.match(answer, /\r\nconnection: close\r\n/i)
        assert.ok(ms < LINGER_MS + 1_000, `closed after ${Math.round(ms)} ms, ${sent} bytes offered`)
      }
      // Each connection read at most the linger's bytes (and what was under way): the
      // 64 MB offered are neither read whole nor kept.
      for (const socket of reads) assert.ok(socket.bytesRead < LINGER_BYTES + 1024 * 1024, `the server read ${socket.bytesRead} bytes of one body`)
      await assertNoneOpen(LINGER_MS + 500)
    } finally {
      server.app.server.off('connection', onConnection)
    }
  })

  it('reads no request after a refused body: one sent after it on the connection is neither answered nor acted on', async () => {
    const s = await open(server)
    s.socket.write(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Length: 5\r\n\r\n`)
    await sleep(100)
    const body = JSON.stringify({ name: 'Pipelined after a refusal', categoryId: 1 })
    s.socket.write(`12345POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
    s.socket.end()
    await s.closed
    assert.equal(parseRawAnswer(s.answer()).status, 413, s.answer())
    assert.equal(s.answer().match(/HTTP\/1\.1 /g)?.length, 1, s.answer())
    await assertNoneOpen(LINGER_MS + 500)
    const listed = await server.request<unknown[]>('/v1/pets?q=Pipelined', { key })
    assert.equal(listed.status, 200, listed.text)
    assert.deepEqual(listed.body, [], 'the request after the refused one made no pet')
  })

  it('keeps the connection of a refused request that has no body: two 401s and a 200 one after the other on it', async () => {
    const s = await open(server)
    // In one write, as a pipelining client sends them: Node parses each request's end only
    // after the hooks that refuse it have run.
    s.socket.write(
      'GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n\r\n' +
        'DELETE /v1/pets/1 HTTP/1.1\r\nHost: x\r\n\r\n' +
        `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`,
    )
    const deadline = performance.now() + 2_000
    // An answer's status line follows the body before it on the same line: not anchored.
    while ((s.answer().match(/HTTP\/1\.1 \d{3}/g)?.length ?? 0) < 3 && performance.now() < deadline) await sleep(20)
    assert.deepEqual([...s.answer().matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]), ['401', '401', '200'], s.answer().slice(0, 600))
    assert.doesNotMatch(s.answer(), /\r\nconnection: close\r\n/i)
    assert.equal(s.socket.readyState, 'open', 'the server kept the connection')
    s.socket.destroy()
  })

  it('answers 405 to a method a path does not allow before reading the body sent with it, and closes the connection', async () => {
    const s = await open(server)
    // 50 KB announced, one byte sent: nothing waits for the rest.
    s.socket.write(`DELETE /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 50000\r\n\r\n{`)
    const time = await s.closed
    assert.equal(parseRawAnswer(s.answer()).status, 405, s.answer())
    assert.match(s.answer(), /\r\nallow: GET, POST, HEAD\r\n/i)
    assert.match(s.answer(), /\r\nconnection: close\r\n/i)
    assert.ok(time < REQUEST_TIMEOUT_S * 1000, `answered after ${Math.round(time)} ms`)
    await assertNoneOpen(LINGER_MS + 500)
  })

  it('closes the connection when a refusal is answered before the body arrived, instead of reading the rest', async () => {
    const s = await open(server)
    // No key: 401 on the headers; the 50 MB announced are never read.
    s.socket.write('POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n{')
    const time = await s.closed
    assert.equal(parseRawAnswer(s.answer()).status, 401)
    assert.match(s.answer(), /\r\nconnection: close\r\n/i)
    assert.ok(time < 2_000, `closed after ${Math.round(time)} ms`)
    await assertNoneOpen(LINGER_MS + 500)
  })

  it('refuses connections past PETSTORE_MAX_CONNECTIONS_PER_IP from one address with 429, and takes them again once some close', async () => {
    const held = await Promise.all(Array.from({ length: MAX_CONNECTIONS }, () => open(server)))
    const extra = await open(server)
    await extra.closed
    const refused = parseRawAnswer(extra.answer())
    assert.equal(refused.status, 429, extra.answer())
    assert.match((refused.body as { message: string }).message, new RegExp(`${MAX_CONNECTIONS} connections open`))
    for (const s of held) s.socket.destroy()
    await Promise.all(held.map((s) => s.closed))
    await sleep(50)
    const res = await server.request('/v1/pets?limit=1', { key })
    assert.equal(res.status, 200)
  })
})
