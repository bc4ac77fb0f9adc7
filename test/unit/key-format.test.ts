import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { displayPrefix, generateApiKey, hashApiKey, keyEnvironmentFor, parseApiKey } from '../../src/api-keys/key-format.js'

describe('API key format', () => {
  it('generates ps_test_ and ps_live_ keys that parse back with their environment', () => {
    for (const environment of ['test', 'live'] as const) {
      const key = generateApiKey(environment)
      assert.match(key, new RegExp(`^ps_${environment}_[0-9A-Za-z]{36}$`))
      assert.deepEqual(parseApiKey(key), { ok: true, environment })
    }
  })

  it('generates a different key every time', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey('test')))
    assert.equal(keys.size, 1000)
  })

  it('refuses a key with one character changed (the checksum catches typos)', () => {
    const key = generateApiKey('test')
    const i = 12
    const typo = key.slice(0, i) + (key[i] === 'a' ? 'b' : 'a') + key.slice(i + 1)
    assert.deepEqual(parseApiKey(typo), { ok: false })
  })

  it('refuses keys of the wrong shape', () => {
    for (const bad of ['', 'ps_test_', 'sk_test_' + 'a'.repeat(36), generateApiKey('test') + 'x', 'ps_prod_' + 'a'.repeat(36)]) {
      assert.deepEqual(parseApiKey(bad), { ok: false }, bad)
    }
  })

  it('hashes with SHA-256 and shows a short non-secret prefix', () => {
    const key = generateApiKey('live')
    assert.match(hashApiKey(key), /^[0-9a-f]{64}$/)
    assert.equal(displayPrefix(key), key.slice(0, 12))
    assert.ok(displayPrefix(key).startsWith('ps_live_'))
  })

  it('uses live keys in production only', () => {
    assert.equal(keyEnvironmentFor('production'), 'live')
    assert.equal(keyEnvironmentFor('staging'), 'test')
    assert.equal(keyEnvironmentFor('development'), 'test')
  })
})
