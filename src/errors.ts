// The error catalog: every error the API sends is one of these codes, with the
// spec's Error body {code, message, status}. The OpenAPI document lists them.

export const ERROR_STATUS = {
  bad_request: 400,
  invalid_body: 400,
  invalid_field: 400,
  invalid_parameter: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  idempotency_key_in_use: 409,
  pet_unavailable: 409,
  order_closed: 409,
  pet_in_order: 409,
  category_in_use: 409,
  category_name_taken: 409,
  endpoint_limit_reached: 409,
  category_limit_reached: 409,
  key_limit_reached: 409,
  endpoint_disabled: 409,
  key_already_rolled: 409,
  key_revoked: 409,
  gone: 410,
  precondition_failed: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  key_banned: 429,
  request_header_fields_too_large: 431,
  internal_error: 500,
  not_implemented: 501,
  service_unavailable: 503,
  outcome_unknown: 503,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[]

export interface ErrorDetail {
  /** The field or parameter at fault, e.g. `categoryId` or `limit`. */
  field: string
  message: string
}

export interface ErrorBody {
  code: ErrorCode
  message: string
  status: number
  details?: ErrorDetail[]
}

/** An error the API answers as it is: thrown anywhere, answered by the error handler. */
export class ApiError extends Error {
  override name = 'ApiError'
  readonly status: number
  readonly details: ErrorDetail[] | undefined
  readonly headers: Readonly<Record<string, string>>
  /** For 503s: which dependency failed, for metrics. */
  readonly dependency: 'store' | 'redis' | undefined
  /** A 5xx the service chose to answer (writes paced): not an error to log. */
  readonly expected: boolean

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: { details?: ErrorDetail[]; headers?: Record<string, string>; dependency?: 'store' | 'redis'; expected?: boolean } = {},
  ) {
    super(message)
    this.status = ERROR_STATUS[code]
    this.details = options.details
    this.headers = options.headers ?? {}
    this.dependency = options.dependency
    this.expected = options.expected ?? false
  }

  toBody(): ErrorBody {
    return errorBody(this.code, this.message, this.details)
  }
}

export function errorBody(code: ErrorCode, message: string, details?: ErrorDetail[]): ErrorBody {
  const body: ErrorBody = { code, message, status: ERROR_STATUS[code] }
  if (details && details.length > 0) body.details = details
  return body
}
