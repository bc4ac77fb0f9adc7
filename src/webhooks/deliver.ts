// One HTTP attempt of a webhook: a POST with the Standard Webhooks headers, to the
// address the guarded lookup checked, no redirects followed (a 3xx is a failure),
// at most 15 s for the whole answer, and nothing of the body read beyond 64 KiB.
import { Agent as HttpAgent, request as httpRequest } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import type { LookupFunction } from 'node:net'

export const DELIVERY_TIMEOUT_MS = 15_000
const USER_AGENT = 'petstore-webhooks/1.0 (+https://www.standardwebhooks.com)'

export interface AttemptResult {
  /** The response's status; undefined when there was none (a timeout, a refused or reset connection). */
  status: number | undefined
  durationMs: number
  /** Seconds, from `Retry-After` on a 429 or 503. */
  retryAfter: number | undefined
  error: string | undefined
}

/** A receiver's idle connection is closed after this long: before Node's own servers (5 s) close theirs, so a reused one is seldom found closed. */
const IDLE_SOCKET_MS = 4_000

/**
 * The dispatcher's connection pools. Every new connection goes through the lookup
 * `lookupFor` gives for its URL, the guarded one (which knows the port: an operator may
 * allow an address on one port alone): a kept-alive socket was checked when it
 * connected, and stays connected to that address and port, so reusing it skips no
 * check (and no second DNS answer can move it). Keep-alive spares each delivery a TCP
 * (and TLS) handshake.
 */
export function createAgents(lookupFor: (url: URL) => LookupFunction) {
  // No lookup of the agents' own: theirs would override the request's.
  const options = { keepAlive: true, timeout: IDLE_SOCKET_MS }
  const http = new HttpAgent(options)
  const https = new HttpsAgent(options)
  return {
    for: (url: URL) => (url.protocol === 'https:' ? https : http),
    lookupFor,
    destroy() {
      http.destroy()
      https.destroy()
    },
  }
}

export type Agents = ReturnType<typeof createAgents>

export function send(url: URL, headers: Record<string, string>, body: string, agents: Agents, timeoutMs = DELIVERY_TIMEOUT_MS): Promise<AttemptResult> {
  const started = performance.now()
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve) => {
    let settled = false
    const done = (result: Omit<AttemptResult, 'durationMs'>) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve({ ...result, durationMs: Math.round(performance.now() - started) })
    }
    const req = request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': USER_AGENT },
        agent: agents.for(url),
        lookup: agents.lookupFor(url),
      },
      (res) => {
        let read = 0
        res.on('data', (chunk: Buffer) => {
          read += chunk.length
          if (read > 65_536) res.destroy()
        })
        const status = res.statusCode ?? 0
        const retryAfter = status === 429 || status === 503 ? retryAfterSeconds(res.headers['retry-after']) : undefined
        res.on('end', () => done({ status, retryAfter, error: undefined }))
        res.on('close', () => done({ status, retryAfter, error: undefined }))
      },
    )
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`))
    }, timeoutMs)
    req.on('error', (error: NodeJS.ErrnoException) => done({ status: undefined, retryAfter: undefined, error: error.message || error.code || 'connection failed' }))
    req.end(body)
  })
}

function retryAfterSeconds(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  if (/^\d+$/.test(value.trim())) return Number(value.trim())
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000))
}
