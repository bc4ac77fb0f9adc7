// One API call: send, read, and retry per the policy in retry.ts until it succeeds,
// is not worth retrying, or runs out of attempts. Throws PetstoreError or
// PetstoreNetworkError.
import type { ErrorBody } from '../errors.js'
import { warnDeprecated } from './deprecation.js'
import { PetstoreError, PetstoreNetworkError, type OperationId, type PetstoreErrorFields, type RateLimitState } from './errors.js'
import { parseDeprecation, parseRateLimit, parseRetryAfter } from './response-headers.js'
import { decideRetry, type Failure, type RetryPolicy } from './retry.js'

export interface TransportOptions {
  /** Already normalized: ends in /v1, no trailing slash. */
  baseUrl: string
  apiKey: string
  fetch: typeof fetch
  sleep: (ms: number) => Promise<void>
  random: () => number
  timeoutMs: number
  policy: RetryPolicy
}

export interface ApiRequest {
  operation: OperationId
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE'
  /** From the base URL on: `/pets?…` */
  path: string
  body?: unknown
  headers?: Record<string, string>
  /** Whether sending it twice cannot do its work twice (see RetryContext). */
  repeatable: boolean
}

export interface ApiResponse {
  status: number
  headers: Headers
  body: unknown
  rateLimit: RateLimitState | undefined
  requestId: string | undefined
}

type Attempt = { response: Response; text: string } | { networkError: unknown }

export function createTransport(options: TransportOptions) {
  const { policy } = options

  async function attempt(url: string, request: ApiRequest): Promise<Attempt> {
    const headers: Record<string, string> = { authorization: `Bearer ${options.apiKey}`, accept: 'application/json', ...request.headers }
    // RFC 7396: a PATCH body is a JSON Merge Patch.
    if (request.body !== undefined) headers['content-type'] = request.method === 'PATCH' ? 'application/merge-patch+json' : 'application/json'
    try {
      const response = await options.fetch(url, {
        method: request.method,
        headers,
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal: AbortSignal.timeout(options.timeoutMs),
      })
      // Read the body here: a connection that drops mid-body is a network failure too.
      return { response, text: await response.text() }
    } catch (networkError) {
      return { networkError }
    }
  }

  return async function send(request: ApiRequest): Promise<ApiResponse> {
    const url = `${options.baseUrl}${request.path}`
    for (let attempts = 1; ; attempts++) {
      const result = await attempt(url, request)
      let failure: Failure
      let giveUp: (reason: string | undefined) => Error
      if ('networkError' in result) {
        failure = { kind: 'network' }
        giveUp = () => new PetstoreNetworkError(request.operation, url, attempts, { cause: result.networkError })
      } else {
        const { response, text } = result
        const deprecation = parseDeprecation(response.headers)
        if (deprecation) warnDeprecated(request.operation, deprecation.sunset)
        if (response.ok) return success(request.operation, response, text, attempts)
        const fields = errorFields(request.operation, response, text, attempts)
        failure = { kind: 'response', status: response.status, code: fields.code, retryAfterSeconds: fields.retryAfter }
        giveUp = (reason) => new PetstoreError(reason ? { ...fields, message: `${fields.message} ${reason}` } : fields)
      }
      const decision = decideRetry(failure, { attempt: attempts, repeatable: request.repeatable, policy, random: options.random })
      if (!decision.retry) throw giveUp(decision.reason)
      await options.sleep(decision.delayMs)
    }
  }
}

function success(operation: OperationId, response: Response, text: string, attempts: number): ApiResponse {
  let body: unknown
  if (response.status === 204) return { status: response.status, headers: response.headers, body: undefined, ...responseState(response) }
  try {
    body = JSON.parse(text)
  } catch {
    throw new PetstoreError({
      ...responseState(response),
      operation,
      status: response.status,
      code: 'invalid_response',
      message: `HTTP ${response.status} with a body that is not JSON`,
      attempts,
    })
  }
  return { status: response.status, headers: response.headers, body, ...responseState(response) }
}

function errorFields(operation: OperationId, response: Response, text: string, attempts: number): PetstoreErrorFields {
  const state = {
    ...responseState(response),
    operation,
    status: response.status,
    retryAfter: parseRetryAfter(response.headers.get('retry-after'), Date.now()),
    attempts,
  }
  const body = errorBody(text)
  if (!body) {
    return { ...state, code: 'invalid_response', message: `HTTP ${response.status} ${response.statusText}: the answer is not the API's Error body` }
  }
  return { ...state, code: body.code, message: body.message, details: body.details }
}

function responseState(response: Response) {
  return { rateLimit: parseRateLimit(response.headers), requestId: response.headers.get('x-request-id') ?? undefined }
}

/** The spec's Error body, when the text is one; `details` is taken on trust. */
function errorBody(text: string): Pick<ErrorBody, 'code' | 'message' | 'details'> | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { code, message, details } = value as Record<string, unknown>
  if (typeof code !== 'string' || typeof message !== 'string') return undefined
  // A newer server may send a code this version does not list (see PetstoreErrorCode).
  return { code: code as ErrorBody['code'], message, details: Array.isArray(details) ? (details as ErrorBody['details']) : undefined }
}
