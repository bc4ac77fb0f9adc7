// A query parameter an operation does not define is refused on every operation,
// naming it and the one most likely meant (a typo must not silently do something
// else: "?stauts=sold" listed every pet), and the document says so. The operations
// come from the served document, so an operation added later is covered.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SCOPES } from '../src/vocabulary/scopes.js'
import { UNLIMITED } from './helpers/keys.js'
import { bodySchema, exampleOf, fillPath, operationsOf, resolve, type Document } from './helpers/openapi-requests.js'
import { startTestServer, type TestServer } from './helpers/server.js'

interface ErrorAnswer {
  code: string
  message: string
  details?: { field: string; message: string }[]
}

/** A typo of `name`: its second and third letters swapped ("status" → "sttaus"). */
const typo = (name: string) => name[0] + name[2]! + name[1]! + name.slice(3)

describe('unknown query parameters', () => {
  let server: TestServer
  let key: string
  let document: Document
  before(async () => {
    server = await startTestServer()
    key = await server.createKey('enterprise', UNLIMITED, { scopes: SCOPES })
    document = (await server.request<Document>('/v1/openapi.json')).body
  })
  after(() => server.close())

  it('the list of pets refuses "stauts" and "limt", suggesting status and limit, instead of listing every pet', async () => {
    const res = await server.request<ErrorAnswer>('/v1/pets?stauts=sold&limt=1', { key })
    assert.equal(res.status, 400, res.text)
    assert.equal(res.body.code, 'invalid_parameter')
    assert.deepEqual(res.body.details?.map((d) => d.field), ['stauts', 'limt'])
    assert.match(res.body.details![0]!.message, /unknown parameter "stauts" \(did you mean "status"\?\)/)
    assert.match(res.body.details![1]!.message, /unknown parameter "limt" \(did you mean "limit"\?\)/)
    assert.equal((await server.request('/v1/pets?status=sold&limit=1', { key })).status, 200, 'the names meant are served')
  })

  it('every operation of the document refuses a parameter it does not define, 400 invalid_parameter naming it', async () => {
    const operations = operationsOf(document)
    assert.ok(operations.length > 20)
    for (const { path, method, operation } of operations) {
      const values: Record<string, string> = {}
      const query = new URLSearchParams()
      for (const parameter of operation.parameters ?? []) {
        const value = String((parameter as { example?: unknown }).example ?? exampleOf(document, parameter.schema))
        if (parameter.in === 'path') values[parameter.name] = value
        if (parameter.in === 'query' && parameter.required) query.set(parameter.name, value)
      }
      const known = (operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name)
      // A typo of a parameter it has, else a name it has nothing like.
      const unknown = known.find((name) => name.length > 3) ? typo(known.find((name) => name.length > 3)!) : 'verbose'
      query.set(unknown, '1')
      const schema = bodySchema(document, operation)
      const res = await server.request<ErrorAnswer>(`/v1${fillPath(path, values)}?${query}`, {
        method: method.toUpperCase(),
        key,
        ...(schema ? { json: exampleOf(document, schema) } : {}),
      })
      const what = `${method.toUpperCase()} ${path}?${query}`
      assert.equal(res.status, 400, `${what}: ${res.text}`)
      assert.equal(res.body.code, 'invalid_parameter', what)
      assert.deepEqual(res.body.details?.map((d) => d.field), [unknown], what)
      if (unknown === 'verbose') assert.match(res.body.message, known.length ? /this operation takes / : /takes no query parameters/, what)
      else assert.match(res.body.message, /did you mean "/, what)
      // The document says so, on the operation's own 400 or the shared one.
      const documented = resolve(document, operation.responses['400']!)
      assert.match(documented.description!, /does not define is refused/, `${what}: its 400 in the document`)
      assert.match(documented.description!, /Codes: .*`invalid_parameter`/, `${what}: the code is listed`)
    }
  })
})
