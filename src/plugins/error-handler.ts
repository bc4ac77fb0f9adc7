// One error handler for every layer: framework, parser, router, hooks, store.
// Known errors become the spec's Error body with a catalog code; anything else is
// logged with its detail and answered 500 with a generic message.
import fp from 'fastify-plugin'
import type { FastifyError, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify'
import { StoreBusyError, StoreUnavailableError } from '../db/store-errors.js'
import { ApiError, type ErrorCode } from '../errors.js'
import { emptyBody } from './json-body.js'
import { validationError } from './validation.js'

// Fastify's own error codes (fastify/lib/errors.js), translated to ours.
const FRAMEWORK_ERRORS: Record<string, () => ApiError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () =>
    new ApiError('unsupported_media_type', 'The request body must be sent with Content-Type: application/json.'),
  FST_ERR_CTP_BODY_TOO_LARGE: () => new ApiError('payload_too_large', 'The request body is larger than the 64 KiB allowed.'),
  FST_ERR_CTP_EMPTY_JSON_BODY: emptyBody,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    new ApiError('invalid_body', 'The Content-Length header does not match the body that was sent.'),
  FST_ERR_BAD_URL: () => new ApiError('invalid_parameter', 'The request path is not a valid URL (check its percent-encoding).'),
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS'])
const RETRY_SOON = { 'retry-after': '1' }

/**
 * A write the service cannot say the outcome of: its statement (or COMMIT) was sent
 * and no answer came, or the deadline passed while it waited. It may have been
 * committed. The one safe retry is with the same Idempotency-Key, which answers with
 * what happened once the database knows; without one, read before writing again.
 */
const outcomeUnknown = (why: string) =>
  new ApiError(
    'outcome_unknown',
    `${why}: this write may or may not have taken effect. Retrying with the same Idempotency-Key is safe (it answers with the outcome); without one, read the resource before retrying.`,
    { headers: RETRY_SOON, dependency: 'store' },
  )

/** The catalog's error for `error`, or undefined for a bug; `method` tells a write (whose outcome may be unknown) from a read. */
export function toApiError(error: FastifyError | Error, method = 'GET'): ApiError | undefined {
  if (error instanceof ApiError) return error
  const fastifyError = error as FastifyError
  if (fastifyError.validation) return validationError(fastifyError.validation, fastifyError.validationContext)
  const known = fastifyError.code ? FRAMEWORK_ERRORS[fastifyError.code] : undefined
  if (known) return known()
  const write = !READS.has(method)
  if (error instanceof StoreBusyError) return new ApiError('service_unavailable', `Too many ${error.what} at once on this instance; retry shortly.`, { headers: RETRY_SOON, expected: true })
  if (error instanceof StoreUnavailableError) {
    if (write && error.outcome === 'unknown') return outcomeUnknown('The database stopped answering while this request was being written')
    return new ApiError('service_unavailable', 'The database is unavailable for a moment; retry shortly.', { headers: RETRY_SOON, dependency: 'store' })
  }
  if (fastifyError.code === 'FST_ERR_HANDLER_TIMEOUT') {
    // PETSTORE_REQUEST_DEADLINE passed; the work it waited on goes on, and may yet commit.
    if (write) return outcomeUnknown('The request was not answered within its deadline')
    return new ApiError('service_unavailable', 'The request was not answered within its deadline; retry shortly.', { headers: RETRY_SOON })
  }
  return undefined
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The error this request was answered with, for metrics and logs. */
    apiError: ApiError | null
  }
}

export function sendError(reply: FastifyReply, error: ApiError) {
  reply.request.apiError = error
  reply.code(error.status).headers(error.headers)
  return reply.type('application/json').send(error.toBody())
}

/**
 * The methods the service's paths answer, with a 405 at least (routes/method-not-allowed.ts);
 * any other is 501 on every path (answerNotFound). Not Fastify's list, which has TRACE
 * and QUERY too.
 */
export const METHODS: HTTPMethods[] = ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS']

/**
 * The one answer to an unknown route. Registered here for the whole app and again
 * by the /v1 scope, whose copy runs after the scope's hooks (key check, rate limit).
 */
export function answerNotFound(request: FastifyRequest, reply: FastifyReply) {
  // originalUrl: the path as sent, before request-path.ts escaped it for the router.
  const path = request.originalUrl.split('?')[0]!
  // A method no route of the service has (TRACE, PROPFIND, …): RFC 9110 §15.6.2's 501,
  // whatever the path, rather than "no route" for a path that exists.
  if (!(METHODS as string[]).includes(request.method)) {
    return sendError(reply, new ApiError('not_implemented', `This service does not implement ${request.method} on any path: its paths answer GET, HEAD, POST, PATCH or DELETE, as the Allow header of their 405 says.`))
  }
  // Outside /v1 (the root, a typo of the version): say where the API and its reference are.
  const hint = path === '/v1' || path.startsWith('/v1/') ? '' : ' The API is under /v1 (e.g. GET /v1/pets, with an API key); its reference is at /docs.'
  return sendError(reply, new ApiError('not_found', `There is no route ${request.method} ${path}.${hint}`))
}

/** For Fastify's `frameworkErrors` option: router errors that never reach setErrorHandler. */
export function answerFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  return sendError(reply, toApiError(error) ?? new ApiError('invalid_parameter', error.message))
}

export default fp(
  async (app) => {
    app.decorateRequest('apiError', null)
    app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const apiError = toApiError(error, request.method)
      if (apiError) {
        if (apiError.status >= 500 && !apiError.expected) request.log.error({ err: error }, apiError.message)
        return sendError(reply, apiError)
      }
      if (fastifyStatusIsClientError(error)) {
        request.log.info({ err: error }, 'unexpected client error')
        return sendError(reply, clientError(error))
      }
      request.log.error({ err: error }, 'request failed')
      return sendError(reply, new ApiError('internal_error', 'Something went wrong on our side; the error has been logged.'))
    })

    app.setNotFoundHandler(answerNotFound)
  },
  { name: 'error-handler' },
)

// The catalog's code for a client error nothing above named: its own status where the
// catalog has a code meaning just that status, else a plain 400.
const CLIENT_ERROR_CODES: Partial<Record<number, ErrorCode>> = {
  400: 'bad_request',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  431: 'request_header_fields_too_large',
}

/** A 4xx from a library that none of the above knows, answered with its own status and code where the catalog has one, else 400 bad_request. */
function clientError(error: FastifyError): ApiError {
  return new ApiError(CLIENT_ERROR_CODES[error.statusCode ?? 400] ?? 'bad_request', error.message)
}

function fastifyStatusIsClientError(error: FastifyError): boolean {
  return typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500
}
