import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { decodeUtf8, emptyBody, nestingDepth, parseJsonBody } from '../../src/plugins/json-body.js'
import { toApiError } from '../../src/plugins/error-handler.js'
import { ApiError } from '../../src/errors.js'

describe('JSON body parsing', () => {
  it('measures nesting depth, ignoring brackets inside strings', () => {
    assert.equal(nestingDepth('{"a": 1}'), 1)
    assert.equal(nestingDepth('[[{"a": [1]}]]'), 4)
    assert.equal(nestingDepth('{"a": "[[[[{{{{\\"]]]"}'), 1)
    assert.equal(nestingDepth('"just a string"'), 0)
  })

  it('parses plain objects', () => {
    assert.deepEqual(parseJsonBody('{"name": "Rex", "categoryId": 1}'), { name: 'Rex', categoryId: 1 })
  })

  const refused = (text: string, pattern: RegExp) =>
    assert.throws(
      () => parseJsonBody(text),
      (e: unknown) => e instanceof ApiError && e.code === 'invalid_body' && pattern.test(e.message),
      text.slice(0, 40),
    )

  it('refuses deep nesting, prototype keys, empty and malformed bodies', () => {
    refused('['.repeat(33) + ']'.repeat(33), /nested/)
    refused('{"__proto__": {"admin": true}}', /__proto__/)
    refused('{"constructor": {"prototype": {}}}', /__proto__/)
    refused('', /empty/)
    refused('{"name": ', /not valid JSON/)
  })

  it('decodes UTF-8 exactly, and refuses bytes that are not UTF-8 instead of replacing them', () => {
    assert.equal(decodeUtf8(Buffer.from('{"name":"𝓡ex\uffff"}')), '{"name":"𝓡ex\uffff"}')
    for (const bytes of [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80] /* an encoded surrogate */, [0xe2, 0x82]]) {
      assert.throws(
        () => decodeUtf8(Buffer.from([0x22, ...bytes, 0x22])),
        (e: unknown) => e instanceof ApiError && e.code === 'invalid_body' && /UTF-8/.test(e.message),
        JSON.stringify(bytes),
      )
    }
  })

  it('answers an empty body with one message, from this parser or from Fastify', () => {
    const fromFastify = toApiError(Object.assign(new Error('empty'), { code: 'FST_ERR_CTP_EMPTY_JSON_BODY' }))
    assert.equal(fromFastify?.message, emptyBody().message)
    assert.throws(() => parseJsonBody('  '), (e: unknown) => e instanceof ApiError && e.message === emptyBody().message)
  })
})
