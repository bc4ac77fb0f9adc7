// Response declarations for the OpenAPI document: a description, the body, and
// the headers a client can rely on. Every status a route can send is declared.
import { Type, type TSchema } from 'typebox'
import type { ErrorCode } from '../errors.js'
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

export const header = (description: string, schema: TSchema = Type.String()) => ({ ...schema, description })

const COMMON_HEADERS: Headers = {
  'X-Request-Id': header('The request id: the one the client sent, when it was sane, or a generated one. It is in the log line of this request.'),
}

export const UNAUTHORIZED = errorResponse('Missing, malformed, unknown or revoked API key.', ['unauthorized'], {
  'WWW-Authenticate': header('`Bearer realm="petstore"`, with `error="invalid_token"` when a key was sent (RFC 6750).'),
})
