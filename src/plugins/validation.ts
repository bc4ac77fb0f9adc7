// Request validation: bodies are checked exactly as sent (no coercion, unknown
// fields refused); query strings and path parameters are text by nature and are
// parsed to numbers, but only when they are plain decimal integers ("0x10", "1e3"
// and " 5" are refused, where Ajv's coercion would accept them), and each is given
// once. A query parameter the operation does not define is refused, naming the one
// most likely meant: a typo ("stauts") must not silently do something else.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import type { FastifySchemaValidationError, FastifySchema, RouteOptions } from 'fastify'
import { closest } from '../closest.js'
import type { TSchema } from 'typebox'
import { ApiError, type ErrorDetail } from '../errors.js'
import { DURATION_PATTERN, DURATION_WORDS } from '../schemas/key.js'
import { LABEL_PATTERN, LABEL_TEXT_NOTE } from '../schemas/text.js'

/** Patterns a caller types, said in words: a 400 that shows a regular expression helps few people. */
const PATTERN_WORDS: Readonly<Record<string, string>> = { [DURATION_PATTERN]: DURATION_WORDS }

type HttpPart = 'body' | 'querystring' | 'params' | 'headers' | string

// Ajv does not know OpenAPI's integer formats; they are bounds we check with
// minimum/maximum, so the format itself always passes.
// date-time (query parameters of the usage history): RFC 3339 with a zone, a real instant.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i
/** A date the calendar has: Date.parse takes 2026-02-30 as March 2. */
const calendarDate = (year: number, month: number, day: number) => new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day && month >= 1 && month <= 12
function isDateTime(text: string): boolean {
  const match = RFC3339.exec(text)
  return match !== null && calendarDate(Number(match[1]), Number(match[2]), Number(match[3])) && !Number.isNaN(Date.parse(text))
}
const formats = { int64: true, int32: true, 'date-time': isDateTime } as const

export function createValidatorCompiler(sharedSchemas: TSchema[]) {
  const bodyAjv = new Ajv({ allErrors: true, verbose: true, coerceTypes: false, useDefaults: false, removeAdditional: false, formats })
  const textAjv = new Ajv({ allErrors: true, coerceTypes: true, useDefaults: true, removeAdditional: false, formats })
  for (const schema of sharedSchemas) {
    bodyAjv.addSchema(schema)
    textAjv.addSchema(schema)
  }
  return ({ schema, httpPart }: { schema: FastifySchema; httpPart?: HttpPart }) =>
    httpPart === 'body' ? bodyAjv.compile(schema) : decimalIntegersOnly(schema, textAjv.compile(schema), httpPart === 'querystring')
}

/**
 * An onRoute hook: every operation (a route with an operationId) gets a querystring
 * schema, an empty one when it takes no parameters, so that its validator runs and
 * refuses the parameters it does not define (decimalIntegersOnly).
 */
export function validateEveryQueryString(route: RouteOptions) {
  const schema = route.schema as (FastifySchema & { operationId?: string }) | undefined
  if (schema?.operationId === undefined) return
  schema.querystring ??= { type: 'object', properties: {} }
}

const INTEGER = /^-?(0|[1-9][0-9]*)$/
// Longer than this, a decimal is beyond 2^53 and Number() would round it.
const MAX_SAFE_DIGITS = 16

type ParameterSchema = { type?: string; minimum?: number; maximum?: number }

/**
 * Wraps a query or path validator with the rules of text parameters: each is given
 * at most once (a repeated one arrives as an array, whatever its type), and an
 * integer is plain decimal within its bounds. An integer out of bounds, of any size
 * or sign, says the bounds: "must be an integer from 1 to 100".
 */
function decimalIntegersOnly(schema: FastifySchema, validate: ValidateFunction, closed: boolean): ValidateFunction {
  const properties = (schema as { properties?: Record<string, ParameterSchema> }).properties ?? {}
  const names = Object.keys(properties)
  if (names.length === 0 && !closed) return validate

  const wrapped = ((data: Record<string, unknown> | undefined) => {
    const errors: ErrorObject[] = []
    if (closed) {
      for (const name in data) {
        if (!Object.hasOwn(properties, name)) errors.push(parameterError(name, 'unknown', { suggestion: closest(name, names), known: names }))
      }
    }
    for (const name of names) {
      const value = data?.[name]
      if (value === undefined) continue
      const property = properties[name]!
      if (Array.isArray(value)) errors.push(parameterError(name, 'single', {}))
      else if (property.type === 'integer' && !isIntegerWithin(value, property)) {
        errors.push(parameterError(name, 'integer', { minimum: property.minimum, maximum: property.maximum }))
      }
    }
    if (errors.length > 0) {
      wrapped.errors = errors
      return false
    }
    const valid = validate(data)
    wrapped.errors = validate.errors
    return valid
  }) as ValidateFunction
  return wrapped
}

function isIntegerWithin(value: unknown, { minimum = -Infinity, maximum = Infinity }: ParameterSchema): boolean {
  if (typeof value !== 'string' || !INTEGER.test(value) || value.replace('-', '').length > MAX_SAFE_DIGITS) return false
  const number = Number(value)
  return number >= minimum && number <= maximum
}

function parameterError(name: string, keyword: string, params: Record<string, unknown>): ErrorObject {
  return { instancePath: `/${name}`, schemaPath: `#/properties/${name}`, keyword, params, message: keyword }
}

const MAX_DETAILS = 20

/** Turns Ajv's errors into our Error body, naming each field or parameter at fault. */
export function validationError(
  errors: FastifySchemaValidationError[] | ErrorObject[],
  context: string | undefined,
): ApiError {
  const where = context === 'body' ? 'field' : 'parameter'
  const root = errors.find((e) => e.instancePath === '' && (e.keyword === 'type' || e.keyword === 'nullable'))
  if (context === 'body' && root) {
    return new ApiError('invalid_body', 'The request body must be a JSON object, as this operation\'s schema in /v1/openapi.json describes.')
  }
  // One problem per field is enough ("" fails both minLength and pattern). A value
  // that fits none of a field's alternatives (anyOf) is told each of them, not only
  // the first one's complaint.
  const byField = new Map<string, ErrorDetail>()
  const alternatives = new Map<string, string[]>()
  for (const error of errors as ErrorObject[]) {
    const detail = describe(error, where)
    if (error.keyword === 'anyOf') {
      const subject = `${where} "${detail.field}"`
      byField.set(detail.field, { field: detail.field, message: `${subject} ${(alternatives.get(detail.field) ?? []).join(', or ')}` })
    } else if (error.schemaPath.includes('/anyOf/')) {
      const branch = alternatives.get(detail.field) ?? []
      if (branch.length === 0) alternatives.set(detail.field, branch)
      branch.push(detail.message.replace(`${where} "${detail.field}" `, ''))
    } else if (!byField.has(detail.field)) byField.set(detail.field, detail)
  }
  const details = [...byField.values()].slice(0, MAX_DETAILS)
  const message = details.length === 1 ? details[0]!.message : `${details.length} problems: ${details.map((d) => d.message).join('; ')}`
  return new ApiError(context === 'body' ? 'invalid_field' : 'invalid_parameter', message, { details })
}

function describe(error: ErrorObject, where: 'field' | 'parameter'): ErrorDetail {
  const params = error.params as Record<string, unknown>
  const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.')
  const name = path || String(params.missingProperty ?? params.additionalProperty ?? '')
  const subject = `${where} "${name}"`
  switch (error.keyword) {
    case 'required':
      return { field: name, message: `missing required ${where} "${name}"` }
    case 'additionalProperties':
      return { field: name, message: `unknown ${where} "${name}"` }
    case 'unknown': {
      const { suggestion, known } = params as { suggestion?: string; known: string[] }
      const takes = known.length === 0 ? 'this operation takes no query parameters' : `this operation takes ${known.join(', ')}`
      return { field: name, message: `unknown ${where} "${name}"${suggestion ? ` (did you mean "${suggestion}"?)` : ''}: ${takes}` }
    }
    case 'single':
      return { field: name, message: `${subject} must be given once` }
    case 'integer': {
      const { minimum, maximum } = params as { minimum?: number; maximum?: number }
      const range = minimum !== undefined && maximum !== undefined ? ` from ${minimum} to ${maximum}` : ''
      return { field: name, message: `${subject} must be an integer${range}` }
    }
    case 'not':
      // Which text: a name's (LABEL_TEXT) or any other's (STORABLE_TEXT); the body's Ajv is verbose for this.
      return (error.schema as { pattern?: string } | undefined)?.pattern === LABEL_PATTERN
        ? { field: name, message: `${subject} must be ${LABEL_TEXT_NOTE}` }
        : { field: name, message: `${subject} must be valid Unicode without U+0000 or lone surrogates` }
    case 'type':
      return { field: name, message: `${subject} must be ${article(String(params.type))}` }
    case 'minimum':
      return { field: name, message: `${subject} must be at least ${String(params.limit)}` }
    case 'maximum':
      return { field: name, message: `${subject} must be at most ${String(params.limit)}` }
    case 'minLength':
      return { field: name, message: `${subject} must be at least ${String(params.limit)} character${params.limit === 1 ? '' : 's'} long` }
    case 'maxLength':
      return { field: name, message: `${subject} must be at most ${String(params.limit)} characters long` }
    case 'pattern': {
      // The names' pattern asks for one non-space character; an id's says its shape.
      if (params.pattern === '\\S') return { field: name, message: `${subject} must not be blank` }
      const words = PATTERN_WORDS[String(params.pattern)]
      return { field: name, message: words ? `${subject} must be ${words}` : `${subject} must match ${String(params.pattern)}` }
    }
    case 'enum':
      return { field: name, message: `${subject} must be one of ${(params.allowedValues as unknown[]).join(', ')}` }
    case 'format':
      return { field: name, message: params.format === 'date-time' ? `${subject} must be a date and time of the calendar with its zone (RFC 3339), such as 2026-11-28T12:00:00Z` : `${subject} must be ${article(String(params.format))}` }
    case 'minItems':
      return { field: name, message: `${subject} must hold at least ${String(params.limit)} item${params.limit === 1 ? '' : 's'}` }
    case 'maxItems':
      return { field: name, message: `${subject} must hold at most ${String(params.limit)} item${params.limit === 1 ? '' : 's'}` }
    case 'uniqueItems':
      // Ajv counts from 0 and names the later item first ("items ## 1 and 0 are identical").
      return { field: name, message: `${subject} must not repeat an item (items ${Number(params.j) + 1} and ${Number(params.i) + 1} are the same)` }
    case 'minProperties':
      // A PATCH of nothing ({}): Ajv's own words name the field "".
      if (name === '') return { field: '', message: `the body must hold at least ${String(params.limit)} field${params.limit === 1 ? '' : 's'} to change` }
      return { field: name, message: `${subject} must hold at least ${String(params.limit)} field${params.limit === 1 ? '' : 's'}` }
    default:
      return { field: name, message: `${subject} ${error.message ?? 'is invalid'}` }
  }
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`
}
