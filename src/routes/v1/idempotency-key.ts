// The Idempotency-Key request header of POST /v1/pets (IETF draft
// httpapi-idempotency-key-header): its syntax, how long a key is remembered, and
// the fingerprint that tells "the same request again" from "another request".
import { createHash } from 'node:crypto'
import { ApiError } from '../../errors.js'

/** A key and its response are remembered for 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000
/** A claim whose request never finished (its process died) is given up after this. */
export const IDEMPOTENCY_LEASE_MS = 60 * 1000
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255

const PRINTABLE = /^[\x20-\x7e]+$/

/**
 * The key, or undefined when the header is absent. The draft makes the value a
 * structured-field string (`"…"`); the bare value most clients send is accepted too.
 */
export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined
  const raw = Array.isArray(header) ? header.join(', ') : header
  const quoted = /^"([^"\\]*)"$/.exec(raw)
  const key = quoted ? quoted[1]! : raw
  if (key.trim() === '' || key.length > MAX_IDEMPOTENCY_KEY_LENGTH || !PRINTABLE.test(key) || (!quoted && key.includes('"'))) {
    throw new ApiError(
      'invalid_parameter',
      `header "Idempotency-Key" must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters, sent once (a UUID is a good choice).`,
      { details: [{ field: 'Idempotency-Key', message: 'not a valid idempotency key' }] },
    )
  }
  return key
}

/** SHA-256 of the body with its keys in order: the same fields and values give the same fingerprint. */
export function fingerprint(body: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(body, Object.keys(body).sort())).digest('hex')
}
