// Secrets at rest, sealed with a main key (AES-256-GCM, node:crypto), so that a dump
// of the database gives no secret away. Two kinds, each bound to its use:
// - webhook signing secrets: sealed by the webhook service when an endpoint is made or
//   its secret rotated, opened by the dispatcher when it signs, so a dump does not let
//   anyone sign webhooks as us;
// - the secret a create answered (a new API key's, a new endpoint's), kept with its
//   Idempotency-Key record for 24 hours so that a retry gets the same 201 (sealed by
//   the service that made it, opened by src/idempotency/ on a replay).
// The store never sees a secret in the clear.
//
// The main key: PETSTORE_SECRET_KEY (32 bytes, base64), required in production; on the
// embedded default, a key file made on first start beside the SQLite database (mode
// 0600). During a rotation the old keys stay in PETSTORE_SECRET_KEY_PREVIOUS to open
// what they sealed, until `npm run reseal-secrets` has sealed every secret again with
// the current key.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { DEFAULT_DATABASE_FILE, type Config } from '../config.js'
import { makeFolders } from '../folders.js'

const VERSION = 'v1'

/** What a sealed value is for, bound to it (its AAD): a sealed value of one use does not open as the other. */
const USES = { 'signing secret': 'petstore webhook signing secret', 'replayed secret': 'petstore replayed secret' } as const
export type SecretUse = keyof typeof USES

export class SecretKeyError extends Error {
  override name = 'SecretKeyError'
}

export interface SecretBox {
  /** `v1.<key id>.<iv>.<ciphertext>.<tag>` (base64url), under the current key. */
  seal(secret: string): string
  /** The secret in the clear; a secret stored before sealing (`whsec_…`) is returned as it is. Throws when no key opens it. */
  open(sealed: string): string
  /** True when `sealed` is not sealed under the current key (a stored secret from before, or an old key's). */
  stale(sealed: string): boolean
  /** The same keys, sealing for another use. */
  for(use: SecretUse): SecretBox
}

/** A key's id in what it sealed: the first 8 hex digits of its SHA-256 (not secret, and enough to pick the key). */
const keyId = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 8)

/** A main key from its base64 text: exactly 32 bytes. */
export function parseMainKey(text: string, name = 'the key'): Buffer {
  const key = Buffer.from(text.trim(), 'base64')
  if (key.length !== 32 || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(text.trim())) throw new SecretKeyError(`${name} must be 32 bytes in base64 (openssl rand -base64 32)`)
  return key
}

/** A box over `current` (seals and opens) and `previous` keys (open only), for webhook signing secrets unless `use` says otherwise. */
export function createSecretBox(current: Buffer, previous: readonly Buffer[] = [], use: SecretUse = 'signing secret'): SecretBox {
  const currentId = keyId(current)
  const keys = new Map([current, ...previous].map((key) => [keyId(key), key]))
  const AAD = Buffer.from(USES[use])
  return {
    seal(secret) {
      const iv = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', current, iv)
      cipher.setAAD(AAD)
      const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
      return [VERSION, currentId, iv.toString('base64url'), ciphertext.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.')
    },
    open(sealed) {
      if (!sealed.startsWith(`${VERSION}.`)) return sealed
      const [, id = '', iv = '', ciphertext = '', tag = ''] = sealed.split('.')
      const key = keys.get(id)
      if (!key) throw new SecretKeyError(`a ${use} is sealed with key ${id}, which is neither PETSTORE_SECRET_KEY nor in PETSTORE_SECRET_KEY_PREVIOUS`)
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
      decipher.setAAD(AAD)
      decipher.setAuthTag(Buffer.from(tag, 'base64url'))
      try {
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8')
      } catch {
        throw new SecretKeyError(`a ${use} sealed with key ${id} does not open: it was altered`)
      }
    },
    stale: (sealed) => !sealed.startsWith(`${VERSION}.${currentId}.`),
    for: (other) => createSecretBox(current, previous, other),
  }
}

export interface SecretKeySource {
  /** PETSTORE_SECRET_KEY, and PETSTORE_SECRET_KEY_PREVIOUS' keys. */
  secretKey: string | undefined
  previousSecretKeys: readonly string[]
  environment: string
  databaseUrl: string
  /** Where the key file goes when the database is not a SQLite file (development on PostgreSQL). */
  defaultKeyFile: string
}

/**
 * The box the config calls for: PETSTORE_SECRET_KEY when set (required in production);
 * otherwise the key file beside the SQLite database (`<file>.secret-key`), or
 * `defaultKeyFile` for PostgreSQL, made with mode 0600 the first time.
 */
export function secretBoxFor(source: SecretKeySource): SecretBox {
  const previous = source.previousSecretKeys.map((text, i) => parseMainKey(text, `PETSTORE_SECRET_KEY_PREVIOUS's key ${i + 1}`))
  if (source.secretKey !== undefined) return createSecretBox(parseMainKey(source.secretKey, 'PETSTORE_SECRET_KEY'), previous)
  requireKeyInProduction(source)
  const file = source.databaseUrl.startsWith('sqlite:') ? `${source.databaseUrl.slice('sqlite:'.length)}.secret-key` : source.defaultKeyFile
  return createSecretBox(keyFile(file), previous)
}

/**
 * Refuses production without PETSTORE_SECRET_KEY: what a start checks before it opens
 * (and migrates) the database, which the key file made otherwise would sit beside.
 */
export function requireKeyInProduction(source: Pick<SecretKeySource, 'environment' | 'secretKey'>): void {
  if (source.secretKey !== undefined || source.environment !== 'production') return
  throw new SecretKeyError('PETSTORE_SECRET_KEY is required in production: 32 random bytes in base64 (openssl rand -base64 32), kept apart from the database; it seals the webhook signing secrets and the secrets kept for Idempotency-Key replays')
}

/** The key in `file`, made (32 random bytes, base64, mode 0600) when there is none. */
function keyFile(file: string): Buffer {
  if (!existsSync(file)) {
    makeFolders(dirname(file))
    try {
      // wx: two processes starting at once do not both write one.
      writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
  return parseMainKey(readFileSync(file, 'utf8'), `the key file ${file}`)
}

/**
 * What a process on a shared database (PostgreSQL) should be told when it seals with a
 * key file of its own host: another host, or a `petstore dispatch` elsewhere, makes a
 * key of its own and cannot open what this one sealed. Undefined when there is nothing to say.
 */
export function localKeyWarning(config: Pick<Config, 'secretKey' | 'databaseUrl'>): string | undefined {
  if (config.secretKey !== undefined || config.databaseUrl.startsWith('sqlite:')) return undefined
  return `PETSTORE_SECRET_KEY is not set: webhook signing secrets are sealed with ${join(dirname(DEFAULT_DATABASE_FILE), 'petstore.secret-key')}, made on this host; every other process on this database (another host, petstore dispatch) needs the same key, so set PETSTORE_SECRET_KEY on all of them`
}

/** The box for this config (server, dispatcher, reseal): a PostgreSQL store in development keeps its key file in the project's data/. */
export function secretBoxFromConfig(config: Config): SecretBox {
  return secretBoxFor({ ...config, defaultKeyFile: join(dirname(DEFAULT_DATABASE_FILE), 'petstore.secret-key') })
}
