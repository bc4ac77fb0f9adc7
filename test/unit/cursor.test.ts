import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { decodeCursor, encodeCursor } from '../../src/routes/v1/cursor.js'
import { ApiError } from '../../src/errors.js'

describe('pagination cursor', () => {
  it('round-trips any safe id', () => {
    for (const id of [1, 20, 123456789, Number.MAX_SAFE_INTEGER]) assert.equal(decodeCursor(encodeCursor(id)), id)
  })

  it('is opaque: URL-safe and not the bare id', () => {
    const cursor = encodeCursor(42)
    assert.match(cursor, /^[A-Za-z0-9_-]+$/)
    assert.notEqual(cursor, '42')
  })

  it('refuses tokens it did not give out with invalid_parameter', () => {
    const forged = [
      '',
      '42',
      'not a cursor',
      Buffer.from('p1:0').toString('base64url'),
      Buffer.from('p1:-5').toString('base64url'),
      Buffer.from('p1:9007199254740993').toString('base64url'),
      encodeCursor(5) + '=',
      'x'.repeat(1000),
    ]
    for (const cursor of forged) {
      assert.throws(
        () => decodeCursor(cursor),
        (e: unknown) => e instanceof ApiError && e.code === 'invalid_parameter',
        cursor,
      )
    }
  })
})
