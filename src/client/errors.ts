// What the typed client throws: the API's Error body with the response's rate-limit
// state and request id, or a network failure. Type-only imports: the client loads
// nothing of the server at run time.
import type { ErrorCode, ErrorDetail } from '../errors.js'

export type OperationId =
  | 'listPets'
  | 'createPet'
  | 'getPet'
  | 'updatePet'
  | 'deletePet'
  | 'placeOrder'
  | 'getOrder'
  | 'listOrders'
  | 'completeOrder'
  | 'cancelOrder'
  | 'getInventory'
  | 'listCategories'
  | 'getCategory'
  | 'createCategory'
  | 'updateCategory'
  | 'deleteCategory'
  | 'createKey'
  | 'listKeys'
  | 'getKey'
  | 'updateKey'
  | 'rollKey'
  | 'revokeKey'
  | 'unbanKey'
  | 'getKeyUsage'
  | 'getUsage'
  | 'getAccount'
  | 'getUsageHistory'
  | 'listEvents'
  | 'redeliverEvent'
  | 'createWebhookEndpoint'
  | 'listWebhookEndpoints'
  | 'getWebhookEndpoint'
  | 'updateWebhookEndpoint'
  | 'deleteWebhookEndpoint'
  | 'rotateWebhookSecret'
  | 'testWebhookEndpoint'
  | 'listWebhookDeliveries'

/** Decision D7: the `X-RateLimit-*` headers of a response. */
export interface RateLimitState {
  /** The limit of the window with the fewest requests left (per minute or per day). */
  limit: number
  /** Requests left in that window. */
  remaining: number
  /** Unix time (seconds) at which that window ends. */
  reset: number
}

/**
 * A code of the API's catalog, or `invalid_response` when the answer was not the
 * API's (not JSON, or not the Error body: a proxy's HTML page, for instance).
 * A newer server may send a code this version does not list; it is passed through.
 */
export type PetstoreErrorCode = ErrorCode | 'invalid_response'

export interface PetstoreErrorFields {
  operation: OperationId
  status: number
  code: PetstoreErrorCode
  message: string
  details?: ErrorDetail[] | undefined
  rateLimit?: RateLimitState | undefined
  retryAfter?: number | undefined
  requestId?: string | undefined
  attempts: number
}

/** The API answered with an error status (after any retries the client made). */
export class PetstoreError extends Error {
  override name = 'PetstoreError'
  readonly operation: OperationId
  /** The HTTP status. */
  readonly status: number
  readonly code: PetstoreErrorCode
  /** One entry per field or parameter at fault, when the API sent them. */
  readonly details: ErrorDetail[] | undefined
  /** The `X-RateLimit-*` headers of the response, when it carried them. */
  readonly rateLimit: RateLimitState | undefined
  /** `Retry-After` of the response, in seconds. */
  readonly retryAfter: number | undefined
  /** `X-Request-Id` of the response: quote it when reporting a problem. */
  readonly requestId: string | undefined
  /** How many requests the client sent for this call. */
  readonly attempts: number

  constructor(fields: PetstoreErrorFields) {
    super(fields.message)
    this.operation = fields.operation
    this.status = fields.status
    this.code = fields.code
    this.details = fields.details
    this.rateLimit = fields.rateLimit
    this.retryAfter = fields.retryAfter
    this.requestId = fields.requestId
    this.attempts = fields.attempts
  }
}

/** No answer arrived: the connection failed, dropped or timed out (after any retries). */
export class PetstoreNetworkError extends Error {
  override name = 'PetstoreNetworkError'

  constructor(
    readonly operation: OperationId,
    readonly url: string,
    readonly attempts: number,
    options: { cause: unknown },
  ) {
    super(`${operation}: no answer from ${url}: ${causeMessage(options.cause)}`, options)
  }
}

function causeMessage(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause)
  // undici's "fetch failed" hides the reason (ECONNREFUSED, ECONNRESET…) in its own cause.
  const inner = cause.cause instanceof Error ? `: ${cause.cause.message}` : ''
  return `${cause.message}${inner}`
}
