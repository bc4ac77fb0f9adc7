// Errors no code of ours names (a library's 4xx) keep their meaning: their own status
// and catalog code where the catalog has one, else 400 bad_request, never the
// invalid_body every such error used to become. A real server on port 0 with the
// error handler, and routes that throw what a library would.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import errorHandler from '../../src/plugins/error-handler.js'
import { StoreBusyError } from '../../src/db/store-errors.js'

const libraryError = (statusCode: number, message: string) => Object.assign(new Error(message), { statusCode })

describe('error handler, client errors from libraries', () => {
  let app: FastifyInstance
  let url: string
  before(async () => {
    app = Fastify({ logger: false })
    await app.register(errorHandler)
    for (const status of [400, 404, 405, 406, 413, 418]) {
      app.get(`/throws/${status}`, async () => {
        throw libraryError(status, `a library said ${status}`)
      })
    }
    await app.listen({ host: '127.0.0.1', port: 0 })
    url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  })
  after(() => app.close())

  const expected: [number, number, string][] = [
    [400, 400, 'bad_request'],
    [404, 404, 'not_found'],
    [405, 405, 'method_not_allowed'],
    [413, 413, 'payload_too_large'],
    [406, 400, 'bad_request'],
    [418, 400, 'bad_request'],
  ]
  for (const [thrown, status, code] of expected) {
    it(`answers a library's ${thrown} as ${status} ${code}, with its message, as an Error body`, async () => {
      const response = await fetch(`${url}/throws/${thrown}`)
      assert.equal(response.status, status)
      assert.deepEqual(await response.json(), { code, message: `a library said ${thrown}`, status })
    })
  }
})

describe('error handler, a store too busy for more of one kind of work', () => {
  it('answers 503 with Retry-After naming the work, and logs no error: any caller may cause it', async () => {
    const lines: { level: number }[] = []
    const app = Fastify({ logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line) as { level: number }) } } })
    await app.register(errorHandler)
    app.get('/busy', async () => {
      throw new StoreBusyError('searches')
    })
    try {
      const response = await app.inject('/busy')
      assert.equal(response.statusCode, 503)
      assert.equal(response.headers['retry-after'], '1')
      assert.deepEqual(response.json(), { code: 'service_unavailable', message: 'Too many searches at once on this instance; retry shortly.', status: 503 })
      assert.deepEqual(lines.filter((line) => line.level >= 50), [])
    } finally {
      await app.close()
    }
  })
})
