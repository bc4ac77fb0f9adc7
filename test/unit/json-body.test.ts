import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { nestingDepth, parseJsonBody } from '../../src/plugins/json-body.js'
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
})
