// Signing secrets sealed at rest: AES-256-GCM under the main key, old keys kept to open
// what they sealed, and the key file made beside a SQLite database.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSecretBox, parseMainKey, secretBoxFor } from '../../src/secrets/secret-box.js'

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

describe('the secret box', () => {
  it('seals so that the secret is not in what is stored, and opens it again', () => {
    const box = createSecretBox(randomBytes(32))
    const sealed = box.seal(SECRET)
    assert.match(sealed, /^v1\.[0-9a-f]{8}\.[\w-]+\.[\w-]+\.[\w-]+$/)
    assert.ok(!sealed.includes(SECRET.slice('whsec_'.length, 20)))
    assert.notEqual(box.seal(SECRET), sealed, 'a fresh IV each time')
    assert.equal(box.open(sealed), SECRET)
    assert.equal(box.stale(sealed), false)
  })

  it('refuses what was altered, and what no key it has sealed', () => {
    const box = createSecretBox(randomBytes(32))
    const sealed = box.seal(SECRET)
    const parts = sealed.split('.')
    const ciphertext = Buffer.from(parts[3]!, 'base64url')
    ciphertext[0]! ^= 1
    parts[3] = ciphertext.toString('base64url')
    assert.throws(() => box.open(parts.join('.')), /was altered/)
    assert.throws(() => createSecretBox(randomBytes(32)).open(sealed), /neither PETSTORE_SECRET_KEY nor in PETSTORE_SECRET_KEY_PREVIOUS/)
  })

  it('binds a sealed value to its use: a secret kept for a replay does not open as a signing secret, nor the reverse', () => {
    const signing = createSecretBox(randomBytes(32))
    const replayed = signing.for('replayed secret')
    assert.equal(replayed.open(replayed.seal(SECRET)), SECRET)
    assert.throws(() => signing.open(replayed.seal(SECRET)), /a signing secret sealed with key [0-9a-f]{8} does not open/)
    assert.throws(() => replayed.open(signing.seal(SECRET)), /a replayed secret sealed with key [0-9a-f]{8} does not open/)
    assert.equal(signing.for('signing secret').open(signing.seal(SECRET)), SECRET)
  })

  it('opens with a previous key during a rotation, and says what the current key did not seal', () => {
    const old = randomBytes(32)
    const sealedBefore = createSecretBox(old).seal(SECRET)
    const rotated = createSecretBox(randomBytes(32), [old])
    assert.equal(rotated.open(sealedBefore), SECRET)
    assert.equal(rotated.stale(sealedBefore), true)
    assert.equal(rotated.stale(rotated.seal(SECRET)), false)
    // A secret stored before secrets were sealed is read as it is, and is stale.
    assert.equal(rotated.open(SECRET), SECRET)
    assert.equal(rotated.stale(SECRET), true)
  })

  it('takes a main key of 32 bytes in base64 only', () => {
    assert.equal(parseMainKey(randomBytes(32).toString('base64')).length, 32)
    for (const bad of ['', 'short', randomBytes(16).toString('base64'), randomBytes(33).toString('base64'), `${randomBytes(32).toString('hex')}`]) assert.throws(() => parseMainKey(bad), /32 bytes in base64/, bad)
  })

  it('requires PETSTORE_SECRET_KEY in production, and elsewhere makes a key file beside the SQLite database, mode 0600, once', () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-key-'))
    try {
      const source = { secretKey: undefined, previousSecretKeys: [], databaseUrl: `sqlite:${join(dir, 'petstore.db')}`, defaultKeyFile: join(dir, 'elsewhere.key') }
      assert.throws(() => secretBoxFor({ ...source, environment: 'production' }), /PETSTORE_SECRET_KEY is required in production/)
      const sealed = secretBoxFor({ ...source, environment: 'development' }).seal(SECRET)
      const file = join(dir, 'petstore.db.secret-key')
      assert.equal(statSync(file).mode & 0o777, 0o600)
      const key = readFileSync(file, 'utf8')
      assert.equal(secretBoxFor({ ...source, environment: 'development' }).open(sealed), SECRET, 'the next start reads the same key')
      assert.equal(readFileSync(file, 'utf8'), key)
      const given = randomBytes(32).toString('base64')
      assert.equal(secretBoxFor({ ...source, secretKey: given, environment: 'production' }).stale(createSecretBox(Buffer.from(given, 'base64')).seal(SECRET)), false)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
