// Requests built from the served OpenAPI document alone, as an outside tool builds
// them: the operations, their parameters and bodies come from the document, not from
// a list kept in the tests, so an operation added to the API is covered once served.
import fc from 'fast-check'

export interface Schema {
  $ref?: string
  type?: string
  enum?: unknown[]
  examples?: unknown[]
  default?: unknown
  minimum?: number
  maximum?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  not?: Schema
  format?: string
  properties?: Record<string, Schema>
  required?: string[]
  minProperties?: number
  items?: Schema
  additionalProperties?: boolean | Schema
}
export interface Parameter {
  name: string
  in: 'query' | 'path' | 'header' | 'cookie'
  required?: boolean
  schema: Schema
}
export interface ResponseObject {
  $ref?: string
  description?: string
  headers?: Record<string, { required?: boolean; schema?: Schema }>
  content?: Record<string, { schema: Schema }>
}
export interface Operation {
  operationId: string
  deprecated?: boolean
  parameters?: Parameter[]
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> }
  responses: Record<string, ResponseObject>
}
export interface Document {
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, Schema>; responses?: Record<string, ResponseObject> }
}

export interface OperationRef {
  path: string
  method: string
  operation: Operation
}

export function operationsOf(document: Document): OperationRef[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
  )
}

/** Follows `#/components/schemas/X` and `#/components/responses/X`. */
export function resolve<T extends { $ref?: string }>(document: Document, value: T): T {
  if (!value.$ref) return value
  const [, , section, name] = value.$ref.split('/')
  const target = (document.components as unknown as Record<string, Record<string, T>>)[section!]?.[name!]
  if (!target) throw new Error(`unresolved ${value.$ref}`)
  return resolve(document, target)
}

export const bodySchema = (document: Document, operation: Operation): Schema | undefined => {
  const schema = operation.requestBody?.content['application/json']?.schema
  return schema && resolve(document, schema)
}

/** One valid value, the first a reader of the document would try. */
export function exampleOf(document: Document, given: Schema): unknown {
  const schema = resolve(document, given)
  if (schema.examples?.length) return schema.examples[0]
  if (schema.enum?.length) return schema.enum[0]
  switch (schema.type) {
    case 'integer':
    case 'number':
      return Math.max(schema.minimum ?? 1, 1)
    case 'boolean':
      return true
    case 'array':
      return []
    case 'object': {
      // The required properties, then optional ones in order until minProperties is met (a patch needs one).
      const names = Object.keys(schema.properties ?? {})
      const required = schema.required ?? []
      const chosen = [...required, ...names.filter((name) => !required.includes(name)).slice(0, Math.max(0, (schema.minProperties ?? 0) - required.length))]
      return Object.fromEntries(chosen.map((name) => [name, exampleOf(document, schema.properties![name]!)]))
    }
    default:
      return 'x'.repeat(Math.max(schema.minLength ?? 1, 1))
  }
}

/** Valid values of a schema: what a property-based tester derives from the document. */
export function validOf(document: Document, given: Schema): fc.Arbitrary<unknown> {
  const schema = resolve(document, given)
  if (schema.enum?.length) return fc.constantFrom(...schema.enum)
  switch (schema.type) {
    case 'integer':
      return fc.oneof(
        fc.integer({ min: Math.max(schema.minimum ?? -(2 ** 31), Number.MIN_SAFE_INTEGER), max: Math.min(schema.maximum ?? 2 ** 31, 2 ** 31) }),
        fc.constantFrom(...[schema.minimum, schema.maximum].filter((v): v is number => v !== undefined)),
      )
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true })
    case 'boolean':
      return fc.boolean()
    case 'array':
      return fc.array(validOf(document, schema.items ?? {}), { maxLength: 3 })
    case 'object': {
      const properties = schema.properties ?? {}
      const record = Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, validOf(document, property)]))
      const minProperties = schema.minProperties ?? 0
      return fc.record(record, { requiredKeys: schema.required ?? [] }).filter((value) => Object.keys(value).length >= minProperties)
    }
    default:
      return validText(schema)
  }
}

/** Strings the schema accepts, from the whole of Unicode (astral, combining, controls, non-characters). */
function validText(schema: Schema): fc.Arbitrary<string> {
  const maxLength = Math.min(schema.maxLength ?? 40, 60)
  const minLength = schema.minLength ?? 0
  const allowed = (text: string) => {
    const length = [...text].length
    if (length < minLength || length > (schema.maxLength ?? Infinity)) return false
    if (schema.pattern && !new RegExp(schema.pattern, 'u').test(text)) return false
    if (schema.not?.pattern && new RegExp(schema.not.pattern, 'u').test(text)) return false
    return true
  }
  // A pattern that random text almost never meets (`^evt_[0-9]+$`) is generated from, not filtered for.
  if (schema.pattern && !schema.not) return fc.stringMatching(new RegExp(schema.pattern)).filter(allowed)
  return fc
    .oneof(
      fc.string({ unit: 'grapheme', minLength, maxLength }),
      fc.string({ unit: 'grapheme-composite', minLength, maxLength }),
      fc.string({ unit: fc.integer({ min: 1, max: 0x10ffff }).filter((c) => c < 0xd800 || c > 0xdfff).map((c) => String.fromCodePoint(c)), minLength, maxLength }),
      fc.string({ minLength, maxLength }),
    )
    .map((text) => (allowed(text) ? text : `${text}x`.slice(-Math.max(minLength, 1))))
    .filter(allowed)
}

/** Values a schema refuses, or that sit on its edges: wrong types, out of range, odd text. */
/** Text that stores and parsers get wrong: NUL, lone surrogates, non-characters, bidi, combining, edges of length. */
export const edgeText = fc.constantFrom(
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfff',
  '\udc00\ud800',
  '\uffff\ufffe',
  '\u202eRex',
  'e\u0301\u0301',
  '🐕‍🦺',
  ' ',
  '\t\n',
  'x'.repeat(200),
  'x'.repeat(201),
  '𝓡'.repeat(200),
  '%zz',
  '../1',
)

export const mutant: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: edgeText },
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
  fc.constantFrom(0, -1, 2 ** 53, 2 ** 64, 1e308, -0, '', ' ', '\u0000', '\ud800', 'a\udfffb', '1', '01', '1e3', '0x10', 'null', true, false, null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 2 }),
)

/** A concrete path: each `{param}` replaced by the encoded value given. */
export function fillPath(path: string, values: Record<string, string>): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => encode(values[name] ?? '1'))
}

/** encodeURIComponent for any string: a lone surrogate has no UTF-8 form, so it is sent as U+FFFD. */
export const encode = (value: string) => encodeURIComponent(value.replace(/[\ud800-\udfff]/gu, '\ufffd'))

/** The formats the document uses, for Ajv: int64 ids are JSON numbers; date-time is RFC 3339 (placedAt, closedAt). */
export const DOCUMENT_FORMATS: Record<string, true | ((value: string) => boolean)> = {
  int64: true,
  'date-time': (value: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(value) && !Number.isNaN(Date.parse(value)),
}
