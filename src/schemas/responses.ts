// Response declarations for the OpenAPI document: a description, the body, and
// the headers a client can rely on. Every status a route can send is declared.
import { Type, type TSchema } from 'typebox'
import type { ErrorCode } from '../errors.js'
import { PLAN_LIMITS } from '../vocabulary/plans.js'
import { ErrorSchema } from './error.js'
import { ref } from './shared.js'

type Headers = Record<string, TSchema>

export function response<T extends TSchema>(description: string, body: T, headers: Headers = {}): T & { description: string; headers: Headers } {
  // @fastify/swagger moves `description` and `headers` into the OpenAPI response object.
  return { ...body, description, headers: { ...COMMON_HEADERS, ...headers } }
}

/** An Error response, naming the codes it can carry. */
export function errorResponse(description: string, codes: ErrorCode[], headers: Headers = {}) {
  return response(`${description} Codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`, ref(ErrorSchema), headers)
}

/** A response header, sent on every answer of that status (`required: true` in the document). */
export const header = (description: string, schema: TSchema = Type.String()) => ({ ...schema, description })

/** Marks a header the document lists as not always sent; openapi-responses.ts turns the mark into `required: false`. */
export const OPTIONAL_HEADER = 'x-petstore-optional'
export const optionalHeader = (description: string, schema: TSchema = Type.String()) => ({ ...header(description, schema), [OPTIONAL_HEADER]: true })

const integer = Type.Integer()

// Decision D7: every /v1 response carries the rate-limit state, errors included.
const FREE = PLAN_LIMITS.free

const COMMON_HEADERS: Headers = {
  'X-Request-Id': header('The request id: the one the client sent, when it was sane, or a generated one. It is in the log line of this request.'),
  'X-RateLimit-Limit': header('The limit of the window with the fewest requests left (per minute or per day).', integer),
  'X-RateLimit-Remaining': header('Requests left in that window after this one.', integer),
  'X-RateLimit-Reset': header('Unix time (seconds) at which that window ends.', integer),
  // The examples are the free plan's numbers.
  'RateLimit-Policy': header(`Both windows (IETF draft): \`"minute";q=${FREE.perMinute};w=60, "day";q=${FREE.perDay};w=86400\`.`),
  RateLimit: header(
    `Requests left and seconds to reset in each window (IETF draft): \`"minute";r=${FREE.perMinute - 1};t=30, "day";r=${FREE.perDay - 1};t=50000\`. While the key is banned, \`r=0\` and \`t\` is the seconds until the ban ends.`,
  ),
}

export const UNAUTHORIZED = errorResponse('Missing, malformed, unknown, revoked, expired or disabled API key.', ['unauthorized'], {
  'WWW-Authenticate': header(
    '`Bearer realm="petstore"`, with `error="invalid_token"` when a key was sent, and an `error_description` saying why when the key is revoked, expired or disabled (RFC 6750).',
  ),
})

export const INSUFFICIENT_SCOPE = errorResponse('The API key lacks the scope this operation needs (listed under `security`).', ['insufficient_scope'], {
  'WWW-Authenticate': header('`Bearer realm="petstore", error="insufficient_scope", scope="<the scope needed>"` (RFC 6750 §3.1).'),
})

/** The 403 of an operation that has a scope and a 403 of its own (`forbidden`): either. */
export function forbiddenOrInsufficientScope(own: { description: string }) {
  return response(`${own.description} Or the API key lacks the scope this operation needs (listed under \`security\`): \`insufficient_scope\`.`, ref(ErrorSchema), {
    'WWW-Authenticate': optionalHeader('With `insufficient_scope`: `Bearer realm="petstore", error="insufficient_scope", scope="<the scope needed>"` (RFC 6750 §3.1).'),
  })
}

/** 413 of an operation that takes a body. */
export const BODY_TOO_LARGE = errorResponse('The body is larger than 64 KiB.', ['payload_too_large'])

/** 415 of an operation that takes a JSON body; `patch`: a merge patch (RFC 7396) too. */
export const notJsonBody = (patch = false) =>
  errorResponse(
    `The body is not sent as ${patch ? 'application/merge-patch+json or application/json' : 'application/json'} in UTF-8 (no other charset, no Content-Encoding).`,
    ['unsupported_media_type'],
  )

/** 422 of an operation that takes an Idempotency-Key; `advice` ends the description. */
export const idempotencyKeyReused = (advice = '') =>
  errorResponse(`This Idempotency-Key was already used with a different request (another body or operation)${advice}.`, ['idempotency_key_reused'])

export const TOO_MANY_REQUESTS = errorResponse(
  'Over the rate limit (`rate_limited`), or banned for sending on while limited (`key_banned`). Wait `Retry-After` seconds, then back off exponentially.',
  ['rate_limited', 'key_banned'],
  { 'Retry-After': header('Whole seconds until the exhausted window resets, or until the ban ends.', integer) },
)
