// Property-based: whatever arrives, the service answers without a 5xx, every error
// is a well-formed Error body whose status is the HTTP status, and it stays up.
// The schema-driven part builds requests from the served OpenAPI document alone, on
// every store. `npm test` runs a bounded number of cases; for more:
//   npm run fuzz -- --runs 2000 [--seed N]
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { parseArgs } from 'node:util'
import { Ajv, type ValidateFunction } from 'ajv'
import fc from 'fast-check'
import { ERROR_CODES } from '../src/errors.js'
import {
  bodySchema,
  edgeText,
  encode,
  fillPath,
  DOCUMENT_FORMATS,
  mutant,
  operationsOf,
  resolve,
  validOf,
  type Document,
  type OperationRef,
  type Parameter,
} from './helpers/openapi-requests.js'
import { STORES, startTestServer, type Reply, type TestServer } from './helpers/server.js'

// Run as a file (npm run fuzz -- --runs N) the arguments are ours; under --test there are none.
const { values: options } = parseArgs({ args: process.argv.slice(2), options: { runs: { type: 'string' }, seed: { type: 'string' } }, strict: false })
const RUNS = options.runs === undefined ? 150 : Number(options.runs)
/** Cases per operation per store in the schema-driven fuzzer. */
const SCHEMA_RUNS = options.runs === undefined ? 100 : Number(options.runs)
const SEED = typeof options.seed === 'string' ? { seed: Number(options.seed) } : {}

function assertWellFormed(res: Reply, allowed: number[]) {
  assert.ok(allowed.includes(res.status), `unexpected ${res.status}: ${res.text}`)
  if (res.status < 400) return
  const body = res.body as Record<string, unknown>
  assert.equal(typeof body, 'object', res.text)
  assert.ok((ERROR_CODES as string[]).includes(body.code as string), res.text)
  assert.equal(typeof body.message, 'string')
  assert.equal(body.status, res.status)
}

// Values that break naive code: wrong types, huge and odd numbers, odd Unicode.
const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 2 ** 53, 2 ** 64, 1e308, -0, '1', '', ' ', '\u0000', '\uFFFF', '𝓡𝓮𝔁', 'null', true, null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.integer(), { maxKeys: 2 }),
)

const petLike = fc.record(
  {
    name: nasty,
    categoryId: nasty,
    status: fc.oneof(nasty, fc.constantFrom('available', 'pending', 'sold')),
    extra: nasty,
  },
  { requiredKeys: [] },
)

describe('fuzzing', () => {
  let server: TestServer
  let key: string
  before(async () => {
    server = await startTestServer()
    key = await server.createKey('enterprise', { perMinute: 1_000_000, perDay: 10_000_000 })
  })
  after(() => server.close())

  it('POST /v1/pets: generated and mutated bodies get 201 or a 4xx Error body', async () => {
    const prototypeKeys = fc.constantFrom('{"__proto__":{"a":1}}', '{"constructor":{"prototype":{}}}', '{"name":"x","categoryId":1,"__proto__":null}')
    const body = fc.oneof(
      petLike.map((v) => JSON.stringify(v)),
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.string({ unit: 'binary' }),
      prototypeKeys,
      fc.integer({ min: 1, max: 2000 }).map((n) => '['.repeat(n)),
    )
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded'), async (text, type) => {
        const res = await server.request('/v1/pets', { method: 'POST', key, body: text, headers: { 'content-type': type } })
        assertWellFormed(res, [201, 400, 413, 415])
      }),
      { numRuns: RUNS, ...SEED },
    )
  })

  it('GET /v1/pets: generated query strings, duplicated parameters included, get 200 or 400', async () => {
    const param = fc.tuple(fc.constantFrom('limit', 'status', 'cursor', 'categoryId', 'q', 'ids', 'sort', 'other', 'limit[]'), fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.integer().map(String)))
    await fc.assert(
      fc.asyncProperty(fc.array(param, { maxLength: 5 }), async (params) => {
        const query = params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')
        assertWellFormed(await server.request(`/v1/pets?${query}`, { key }), [200, 400])
      }),
      { numRuns: RUNS, ...SEED },
    )
  })

  it('GET /v1/pets/{petId}: generated ids get 200, 400 or 404', async () => {
    const id = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.bigInt().map(String), fc.double().map(String))
    await fc.assert(
      fc.asyncProperty(id, fc.boolean(), async (raw, encode) => {
        const path = encode ? encodeURIComponent(raw) : raw.replace(/[/?#\s]/g, '')
        const res = await server.request(`/v1/pets/${path}`, { key })
        assertWellFormed(res, [200, 400, 404, 405])
      }),
      { numRuns: RUNS, ...SEED },
    )
  })

  it('generated Authorization and Content-Type headers never cause a 5xx', async () => {
    const header = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) })
    await fc.assert(
      fc.asyncProperty(header, header, fc.constantFrom('GET', 'POST', 'PUT', 'DELETE'), async (authorization, contentType, method) => {
        const res = await server.request('/v1/pets', {
          method,
          headers: { authorization: `Bearer ${authorization}`, 'content-type': contentType || 'application/json' },
          body: method === 'POST' || method === 'PUT' ? '{"name":"x","categoryId":1}' : undefined,
        })
        assertWellFormed(res, [401, 429])
      }),
      { numRuns: RUNS, ...SEED },
    )
  })

  it('raw bytes on the socket never bring the process down', async () => {
    const { port } = new URL(server.url)
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2048 }), async (bytes) => {
        await new Promise<void>((resolve) => {
          const socket = connect(Number(port), '127.0.0.1')
          socket.on('error', () => resolve())
          socket.on('close', () => resolve())
          socket.setTimeout(100, () => socket.destroy())
          socket.end(Buffer.from(bytes))
        })
      }),
      { numRuns: Math.min(RUNS, 50), ...SEED },
    )
    assert.equal((await server.request('/healthz')).status, 200)
  })
})

/** One generated request, and what was sent, to check the answer against. */
interface Case {
  path: string
  method: string
  headers: Record<string, string>
  body?: string | Uint8Array
  /** The JSON object sent, when the body was one: a 201 must hold exactly these values. */
  sentObject?: Record<string, unknown>
}

for (const store of STORES) describe(`schema-driven fuzzing of every documented operation (${store})`, () => {
  let server: TestServer
  let key: string
  let document: Document
  let ajv: Ajv
  const existingIds: number[] = []
  before(async () => {
    server = await startTestServer({ store })
    key = await server.createKey('enterprise', { perMinute: 10_000_000, perDay: 100_000_000 })
    document = (await server.request<Document>('/v1/openapi.json')).body
    ajv = new Ajv({ strict: false, allErrors: true, formats: DOCUMENT_FORMATS })
    ajv.addSchema({ ...document, $id: 'openapi' })
    for (const name of ['Seed 1', 'Seed 2']) {
      const created = await server.request<{ id: number }>('/v1/pets', { method: 'POST', key, json: { name, categoryId: 1 } })
      existingIds.push(created.body.id)
    }
  })
  after(() => server.close())

  /** A path parameter: an existing id, a valid value from its schema, or a mutant. */
  const pathValue = (parameter: Parameter): fc.Arbitrary<string> =>
    fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...existingIds).map(String) },
      { weight: 3, arbitrary: validOf(document, parameter.schema).map(String) },
      { weight: 2, arbitrary: mutant.map((value) => (typeof value === 'string' ? value : JSON.stringify(value) ?? '')) },
      { weight: 1, arbitrary: fc.stringMatching(/^[0-9]{17,400}$/) },
    )

  const queryValue = (parameter: Parameter): fc.Arbitrary<string[]> =>
    fc.oneof(
      { weight: 4, arbitrary: validOf(document, parameter.schema).map((v) => [String(v)]) },
      { weight: 2, arbitrary: mutant.map((v) => [typeof v === 'string' ? v : String(JSON.stringify(v))]) },
      { weight: 1, arbitrary: fc.tuple(validOf(document, parameter.schema), validOf(document, parameter.schema)).map(([a, b]) => [String(a), String(b)]) },
    )

  /** A body from the schema, then maybe mutated: a field changed, dropped or added, or not an object at all. */
  function bodyFor(operation: OperationRef): fc.Arbitrary<{ body?: string | Uint8Array; object?: Record<string, unknown> }> {
    const schema = bodySchema(document, operation.operation)
    if (!schema) return fc.constant({})
    const valid = validOf(document, schema) as fc.Arbitrary<Record<string, unknown>>
    const fields = Object.keys(schema.properties ?? {})
    const asJson = (object: Record<string, unknown>) => ({ body: JSON.stringify(object), object })
    return fc.oneof(
      { weight: 5, arbitrary: valid.map(asJson) },
      // Every text field set to text that stores get wrong (valid or not: the answer says which).
      {
        weight: 2,
        arbitrary: fc.tuple(valid, edgeText).map(([object, text]) =>
          asJson(Object.fromEntries(Object.entries(object).map(([field, value]) => [field, resolve(document, schema.properties![field]!).type === 'string' && !resolve(document, schema.properties![field]!).enum ? text : value]))),
        ),
      },
      { weight: 3, arbitrary: fc.tuple(valid, fc.constantFrom(...fields), mutant).map(([object, field, value]) => asJson({ ...object, [field]: value })) },
      { weight: 1, arbitrary: fc.tuple(valid, fc.constantFrom(...fields)).map(([object, field]) => asJson(Object.fromEntries(Object.entries(object).filter(([k]) => k !== field)))) },
      { weight: 1, arbitrary: fc.tuple(valid, fc.string({ minLength: 1, maxLength: 8 }), mutant).map(([object, field, value]) => asJson({ ...object, [field]: value })) },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => ({ body: JSON.stringify(value) })) },
      { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ body: bytes })) },
      // Valid JSON text around bytes that are not UTF-8.
      { weight: 1, arbitrary: valid.map((object) => ({ body: Buffer.concat([Buffer.from(JSON.stringify(object).slice(0, -1)), Buffer.from(',"x":"\xff\xfe"}', 'latin1')]) })) },
    )
  }

  function caseFor(operation: OperationRef): fc.Arbitrary<Case> {
    const parameters = operation.operation.parameters ?? []
    const pathParameters = parameters.filter((p) => p.in === 'path')
    const queryParameters = parameters.filter((p) => p.in === 'query')
    const path = fc.tuple(...pathParameters.map((p) => pathValue(p))).map((values) => fillPath(operation.path, Object.fromEntries(values.map((v, i) => [pathParameters[i]!.name, v]))))
    const query = fc
      .tuple(...queryParameters.map((p) => fc.option(queryValue(p), { nil: undefined, freq: 2 })))
      .map((values) => values.flatMap((list, i) => (list ?? []).map((v) => `${encode(queryParameters[i]!.name)}=${encode(v)}`)).join('&'))
    const contentType = fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8') },
      { weight: 1, arbitrary: fc.constantFrom('text/plain', undefined) },
    )
    const withKey = fc.integer({ min: 0, max: 9 }).map((n) => n > 0)
    return fc.record({ path, query, body: bodyFor(operation), contentType, withKey }).map(({ path, query, body, contentType, withKey }) => {
      const headers: Record<string, string> = {}
      if (withKey) headers.authorization = `Bearer ${key}`
      if (body.body !== undefined && contentType) headers['content-type'] = contentType
      return { path: `/v1${path}${query ? `?${query}` : ''}`, method: operation.method.toUpperCase(), headers, body: body.body, sentObject: body.object }
    })
  }

  const validators = new Map<string, ValidateFunction>()
  function validatorFor(operation: OperationRef, status: string): ValidateFunction {
    const id = `${operation.method} ${operation.path} ${status}`
    let validate = validators.get(id)
    if (!validate) {
      const declared = operation.operation.responses[status]!
      const pointer = (declared.$ref ? [...declared.$ref.slice(2).split('/')] : ['paths', operation.path, operation.method, 'responses', status])
        .concat(['content', 'application/json', 'schema'])
        .map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1'))
        .join('/')
      validate = ajv.getSchema(`openapi#/${pointer}`)!
      assert.ok(validate, `${id}: a schema is documented`)
      validators.set(id, validate)
    }
    return validate
  }

  async function check(operation: OperationRef, sent: Case) {
    const res = await server.request(sent.path, { method: sent.method, headers: sent.headers, body: sent.body })
    if (process.env.FUZZ_DEBUG) console.error(operation.operation.operationId, res.status, sent.path.slice(0, 60))
    const where = `${operation.operation.operationId} ${sent.method} ${sent.path} -> ${res.status} ${res.text.slice(0, 300)}`
    assert.ok(res.status < 500, `no 5xx: ${where}`)
    const status = String(res.status)
    assert.ok(status in operation.operation.responses, `the status is documented for the operation: ${where}`)
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-request-id']) assert.ok(res.headers.has(name), `${name}: ${where}`)
    if (res.status === 204) {
      // No Content (deletePet): no body and no content type, as the document says.
      assert.equal(res.text, '', where)
      return
    }
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/, where)
    if (res.status >= 400) {
      const body = res.body as { code?: string; status?: number; message?: string }
      assert.ok((ERROR_CODES as string[]).includes(body.code ?? ''), `an Error code: ${where}`)
      assert.equal(body.status, res.status, `Error status equals the HTTP status: ${where}`)
      assert.equal(typeof body.message, 'string', where)
    }
    const validate = validatorFor(operation, status)
    assert.ok(validate(res.body), `the body matches the document: ${ajv.errorsText(validate.errors)}: ${where}`)
    if (res.status === 201 && sent.sentObject) {
      // What was sent is what was stored: the 201 holds each value sent, and reads back the same.
      const created = res.body as Record<string, unknown>
      for (const [field, value] of Object.entries(sent.sentObject)) assert.deepEqual(created[field], value, `${field} as sent: ${where}`)
      const location = res.headers.get('location')
      assert.ok(location, `a 201 names its Location: ${where}`)
      const read = await server.request(location, { headers: { authorization: `Bearer ${key}` } })
      assert.equal(read.status, 200, `${location}: ${read.text}`)
      assert.equal(read.text, res.text, `reads back byte for byte: ${where}`)
      if (typeof created.id === 'number') existingIds.push(created.id)
    }
  }

  it('answers every generated request as documented: no 5xx, Error bodies, rate-limit headers, valid 2xx bodies, created data read back as sent', async () => {
    const operations = operationsOf(document)
    assert.ok(operations.length >= 3)
    for (const operation of operations) {
      await fc.assert(
        fc.asyncProperty(caseFor(operation), (sent) => check(operation, sent)),
        { numRuns: SCHEMA_RUNS, ...SEED },
      )
    }
  })
})
