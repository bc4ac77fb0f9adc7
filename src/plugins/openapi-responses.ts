// The answers no route schema names but every operation can give (decision D2:
// the document lists, for each operation, every status it can answer), and which
// response headers are always sent. Applied to the finished document, so that
// every operation, today's and tomorrow's, gets them without a line in its route.
import { OPTIONAL_HEADER } from '../schemas/responses.js'

interface HeaderObject {
  description?: string
  required?: boolean
  schema: Record<string, unknown>
}
interface ResponseObject {
  description: string
  headers?: Record<string, HeaderObject>
  content?: Record<string, { schema: unknown }>
}
interface OperationObject {
  requestBody?: unknown
  responses?: Record<string, ResponseObject>
}
type Document = { paths?: Record<string, Record<string, OperationObject>>; components?: { responses?: Record<string, ResponseObject> } }

const METHODS_WITH_BODY = new Set(['post', 'put', 'patch', 'delete'])

const error = { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }
const integer = { type: 'integer' }
const text = { type: 'string' }

/**
 * The rate-limit headers on an answer the limiter may not have counted: a 500 or
 * 503 can come from the limiter or the key store themselves.
 */
const rateLimitIfCounted = (): Record<string, HeaderObject> => ({
  'X-Request-Id': { description: 'The request id, as on every answer.', required: true, schema: text },
  'X-RateLimit-Limit': { description: 'As on every answer, when the request was counted.', required: false, schema: integer },
  'X-RateLimit-Remaining': { description: 'As on every answer, when the request was counted.', required: false, schema: integer },
  'X-RateLimit-Reset': { description: 'As on every answer, when the request was counted.', required: false, schema: integer },
})

/** The rate-limit headers on an answer given after the /v1 guard counted the request (a body is read only then). */
const rateLimitCounted = (): Record<string, HeaderObject> =>
  Object.fromEntries(Object.entries(rateLimitIfCounted()).map(([name, header]) => [name, { ...header, description: header.description?.replace(', when the request was counted', ''), required: true }]))

/** Shared answers, referenced from each operation: `#/components/responses/…`. */
const COMMON_RESPONSES: Record<string, [status: string, ResponseObject, bodyOnly?: boolean]> = {
  MalformedBody: [
    '400',
    { description: 'The body is not JSON, not UTF-8, or empty. Codes: `invalid_body`.', headers: rateLimitCounted(), ...error },
    true,
  ],
  RequestTimeout: [
    '408',
    {
      description:
        'The request did not arrive in time (headers within 10 s, the whole request within the server\'s request timeout). Answered on the connection before the request is routed, so without rate-limit headers; the connection closes. Codes: `request_timeout`.',
      ...error,
    },
  ],
  PayloadTooLarge: ['413', { description: 'The body is larger than 64 KiB. Codes: `payload_too_large`.', headers: rateLimitCounted(), ...error }, true],
  UnsupportedMediaType: [
    '415',
    { description: 'A body was sent with another Content-Type than application/json. Codes: `unsupported_media_type`.', headers: rateLimitCounted(), ...error },
    true,
  ],
  HeadersTooLarge: [
    '431',
    {
      description:
        'The request headers are larger than 16 KiB. Answered on the connection before the request is routed, so without rate-limit headers; the connection closes. Codes: `request_header_fields_too_large`.',
      ...error,
    },
  ],
  InternalError: [
    '500',
    { description: 'Something failed on our side; it is logged with the request id. Codes: `internal_error`.', headers: rateLimitIfCounted(), ...error },
  ],
  ServiceUnavailable: [
    '503',
    {
      description:
        'A dependency (the database, or Redis when the service is set to fail closed) does not answer for a moment, or the request was not answered within its deadline (`PETSTORE_REQUEST_DEADLINE`); retry after `Retry-After` seconds. Codes: `service_unavailable` (nothing was done); `outcome_unknown` (a write whose answer from the database never came: it may have taken effect, and the one safe retry is with the same `Idempotency-Key`).',
      headers: { ...rateLimitIfCounted(), 'Retry-After': { description: 'Seconds to wait before retrying.', required: false, schema: integer } },
      ...error,
    },
  ],
}

export function completeResponses<T>(openapiObject: T): T {
  const document = openapiObject as Document
  const components = (document.components ??= {})
  const used = (components.responses = { ...components.responses })

  for (const [, methods] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(methods)) {
      const responses = (operation.responses ??= {})
      for (const response of Object.values(responses)) markRequiredHeaders(response)
      for (const [name, [status, , bodyOnly]] of Object.entries(COMMON_RESPONSES)) {
        // Fastify parses a body on these methods only, whether or not the operation takes one.
        if (bodyOnly && !METHODS_WITH_BODY.has(method)) continue
        if (status in responses) continue
        ;(responses as Record<string, unknown>)[status] = { $ref: `#/components/responses/${name}` }
        used[name] = COMMON_RESPONSES[name]![1]
      }
    }
  }
  return openapiObject
}

/** A header is sent on every answer of its status unless marked optional (responses.ts). */
function markRequiredHeaders(response: ResponseObject) {
  for (const header of Object.values(response.headers ?? {})) {
    // Idempotent: the document may be built more than once (/v1/openapi.json, /docs/json).
    header.required ??= header.schema[OPTIONAL_HEADER] !== true
    delete header.schema[OPTIONAL_HEADER]
  }
}
