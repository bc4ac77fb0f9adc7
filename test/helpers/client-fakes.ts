// What the typed client's tests inject to prove retries: a fetch that loses
// connections or answers on purpose, a scripted node:http server, and a sleep that
// records its waits instead of waiting.
import assert from 'node:assert/strict'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A sleep that records each wait and returns at once (or moves a fake clock). */
export function recordingSleep(onWait: (ms: number) => void = () => {}) {
  const waits: number[] = []
  return {
    waits,
    sleep: async (ms: number) => {
      waits.push(ms)
      onWait(ms)
    },
  }
}

export interface SeenRequest {
  method: string
  url: string
  headers: Headers
}

/** Wraps the real fetch: records each request, and fails the ones `fail` picks as a dropped connection would. */
export function flakyFetch(fail: (call: number) => 'before' | 'after-response' | false = () => false) {
  const seen: SeenRequest[] = []
  const replies: Response[] = []
  const fetch: typeof globalThis.fetch = async (input, init) => {
    seen.push({ method: init?.method ?? 'GET', url: String(input), headers: new Headers(init?.headers) })
    const mode = fail(seen.length)
    if (mode === 'before') throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') })
    const response = await globalThis.fetch(input, init)
    replies.push(response)
    if (mode === 'after-response') {
      // The server did the work and answered; the answer is lost on the way back.
      await response.text()
      throw new TypeError('fetch failed', { cause: new Error('socket hang up') })
    }
    return response
  }
  return { fetch, seen, replies }
}

export interface ScriptedReply {
  status: number
  headers?: Record<string, string>
  body?: unknown
  /** Sent as it is (text/html), instead of body as JSON. */
  raw?: string
}

/** A node:http server answering the given replies in turn (the last one forever), recording requests. */
export async function scriptedServer(replies: ScriptedReply[]) {
  const seen: { method: string; url: string; headers: IncomingHttpHeaders }[] = []
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers })
    req.resume()
    const reply = replies.length > 1 ? replies.shift()! : replies[0]!
    res.writeHead(reply.status, { 'content-type': reply.raw === undefined ? 'application/json' : 'text/html', ...reply.headers })
    res.end(reply.raw ?? JSON.stringify(reply.body ?? null))
  })
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, seen, close: () => new Promise<void>((done) => server.close(() => done())) }
}

export const errorBody = (status: number, code: string, message = code) => ({ status, code, message })

export async function rejectsWith<T extends Error>(promise: Promise<unknown>, type: new (...args: never[]) => T): Promise<T> {
  try {
    await promise
  } catch (error) {
    assert.ok(error instanceof type, `expected ${type.name}, got ${String(error)}`)
    return error
  }
  assert.fail(`expected ${type.name}, but the call succeeded`)
}
