// One HTTP attempt of a webhook: a POST with the Standard Webhooks headers, to the
// address the guarded lookup checked, no redirects followed (a 3xx is a failure),
// at most 15 s for the whole answer, and nothing of the body read beyond 64 KiB.
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
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

export function send(url: URL, headers: Record<string, string>, body: string, lookup: LookupFunction, timeoutMs = DELIVERY_TIMEOUT_MS): Promise<AttemptResult> {
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
        lookup,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': USER_AGENT },
        // A fresh connection per attempt: a pooled socket would skip the lookup's check.
        agent: false,
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
