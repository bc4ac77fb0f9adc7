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
  requestBody?: { required?: boolean }
  responses?: Record<string, ResponseObject>
  [OPTIONAL_BODY]?: true
}

/** The mark openapi.ts puts on an operation whose body may be left out (`config.optionalBody`); taken off here. */
export const OPTIONAL_BODY = 'x-petstore-optional-body'
type Document = { paths?: Record<string, Record<string, OperationObject>>; components?: { responses?: Record<string, ResponseObject> } }

/** The methods Fastify runs a content-type parser on (a 415 for another type), whether or not the operation takes a body. */
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

/** Every operation refuses the query parameters it does not define (plugins/validation.ts). */
const UNKNOWN_PARAMETER = 'A query parameter the operation does not define is refused, naming it and the one it most likely meant (`?stauts=sold`: did you mean "status"?): `invalid_parameter`.'

/** Shared answers, referenced from each operation: `#/components/responses/…`. */
/**
 * Which operations an answer applies to: those that take a body (a requestBody), those
 * that take none (any body is refused, plugins/json-body.ts), those whose method Fastify
 * parses a Content-Type for, or all (undefined).
 */
type AppliesTo = 'with body' | 'without body' | 'body method'
const COMMON_RESPONSES: Record<string, [status: string, ResponseObject, appliesTo?: AppliesTo]> = {
  MalformedBody: [
    '400',
    { description: `The body is not JSON, not UTF-8, or empty: \`invalid_body\`. ${UNKNOWN_PARAMETER} Codes: \`invalid_body\`, \`invalid_parameter\`.`, headers: rateLimitCounted(), ...error },
    'with body',
  ],
  UnknownParameter: ['400', { description: `${UNKNOWN_PARAMETER} Codes: \`invalid_parameter\`.`, headers: rateLimitCounted(), ...error }],
  RequestTimeout: [
    '408',
    {
      description:
        'The request did not arrive in time (headers within 10 s, the whole request within the server\'s request timeout). Answered on the connection before the request is routed, so without rate-limit headers; the connection closes. Codes: `request_timeout`.',
      ...error,
    },
  ],
  PayloadTooLarge: ['413', { description: 'The body is larger than 64 KiB. Codes: `payload_too_large`.', headers: rateLimitCounted(), ...error }, 'with body'],
  BodyNotTaken: [
    '413',
    {
      description:
        'A body was sent (`Content-Length` above 0, or chunked), and this operation takes none (an empty body, `Content-Length: 0`, is not one). Refused before the body is read and before the key is checked, so without rate-limit headers; the connection closes. Codes: `payload_too_large`.',
      headers: rateLimitIfCounted(),
      ...error,
    },
    'without body',
  ],
  UnsupportedMediaType: [
    '415',
    { description: 'The Content-Type is not application/json in UTF-8 (on an operation that takes no body, even with an empty one). Codes: `unsupported_media_type`.', headers: rateLimitCounted(), ...error },
    'body method',
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
        'A dependency (the database, or Redis when the service is set to fail closed) does not answer for a moment, the request was not answered within its deadline (`PETSTORE_REQUEST_DEADLINE`), or (a write that makes events) webhook deliveries are so far behind that writes are paced and this one would have waited more than 2 s (`PETSTORE_WEBHOOK_MAX_LAG`); retry after `Retry-After` seconds. Codes: `service_unavailable` (nothing was done); `outcome_unknown` (a write whose answer from the database never came: it may have taken effect, and the one safe retry is with the same `Idempotency-Key`).',
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
      if (operation[OPTIONAL_BODY]) {
        delete operation[OPTIONAL_BODY]
        if (operation.requestBody) operation.requestBody.required = false
      }
      const responses = (operation.responses ??= {})
      for (const response of Object.values(responses)) markRequiredHeaders(response)
      const own400 = responses['400']
      if (own400?.description !== undefined) own400.description = withUnknownParameter(own400.description)
      for (const [name, [status, , appliesTo]] of Object.entries(COMMON_RESPONSES)) {
        if (appliesTo === 'with body' && operation.requestBody === undefined) continue
        if (appliesTo === 'without body' && operation.requestBody !== undefined) continue
        if (appliesTo === 'body method' && !METHODS_WITH_BODY.has(method)) continue
        if (status in responses) continue
        ;(responses as Record<string, unknown>)[status] = { $ref: `#/components/responses/${name}` }
        used[name] = COMMON_RESPONSES[name]![1]
      }
    }
  }
  return openapiObject
}

/** An operation's own 400 description, saying that unknown query parameters are refused too (once: the document may be built twice). */
function withUnknownParameter(description: string): string {
  if (description.includes(UNKNOWN_PARAMETER)) return description
  const codes = / Codes: (.*)\.$/.exec(description)
  if (!codes) return `${description} ${UNKNOWN_PARAMETER}`
  const listed = codes[1]!.includes('`invalid_parameter`') ? codes[1] : `${codes[1]}, \`invalid_parameter\``
  return `${description.slice(0, codes.index)} ${UNKNOWN_PARAMETER} Codes: ${listed}.`
}

/** A header is sent on every answer of its status unless marked optional (responses.ts). */
function markRequiredHeaders(response: ResponseObject) {
  for (const header of Object.values(response.headers ?? {})) {
    // Idempotent: the document may be built more than once (/v1/openapi.json, /docs/json).
    header.required ??= header.schema[OPTIONAL_HEADER] !== true
    delete header.schema[OPTIONAL_HEADER]
  }
}
