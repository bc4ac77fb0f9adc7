// The Idempotency-Key request header of POST /v1/pets (IETF draft
// httpapi-idempotency-key-header): its syntax, how long a key is remembered, and
// the fingerprint that tells "the same request again" from "another request".
import { createHash } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { ApiError } from '../errors.js'
import type { NewPet } from '../schemas/pet.js'

/** A key and its response are remembered for 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000
/**
 * A claim whose request never finished (its process died, or the store failed and
 * the claim could not be freed) is given up after this: longer than any request may
 * take (a statement times out after 5 s), short enough that a retry soon runs afresh.
 */
export const IDEMPOTENCY_LEASE_MS = 15 * 1000
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255

const PRINTABLE = /^[\x20-\x7e]+$/

/**
 * The request's key, or undefined when the header is absent. The draft makes the
 * value a structured-field string (`"…"`); the bare value most clients send is
 * accepted too, without quotes or commas (a comma is how a repeated header arrives
 * joined). A header sent twice is refused: headersDistinct tells it from one value,
 * but Node builds that for every header at once, so only when the header is there.
 */
export function parseIdempotencyKey(request: IncomingMessage): string | undefined {
  if (request.headers['idempotency-key'] === undefined) return undefined
  const values = request.headersDistinct['idempotency-key'] ?? []
  const raw = values.length === 1 ? values[0]! : ''
  const quoted = /^"([^"\\]*)"$/.exec(raw)
  const key = quoted ? quoted[1]! : raw
  if (key.trim() === '' || key.length > MAX_IDEMPOTENCY_KEY_LENGTH || !PRINTABLE.test(key) || (!quoted && /[",]/.test(key))) {
    throw new ApiError(
      'invalid_parameter',
      `header "Idempotency-Key" must be sent once, as 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters without commas or quotes, or as a quoted string (a UUID is a good choice).`,
      { details: [{ field: 'Idempotency-Key', message: 'not a valid idempotency key' }] },
    )
  }
  return key
}

/**
 * SHA-256 of the animal asked for, its keys in order and the default status filled
 * in: the same fields and values (leaving out "status" or sending "available")
 * give the same fingerprint.
 */
export function fingerprint(pet: NewPet): string {
  const canonical = { categoryId: pet.categoryId, name: pet.name, status: pet.status ?? 'available' }
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex')
}

/**
 * The fingerprint of another create-like operation: its name and its canonical
 * body (fields in a fixed order, defaults filled in), so that one key sent to two
 * operations is "another request" (422), never a replay of the other's answer.
 */
export function fingerprintOf(operationId: string, canonical: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify({ operationId, ...canonical })).digest('hex')
}
