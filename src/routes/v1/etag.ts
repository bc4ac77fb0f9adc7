// ETag and If-Match (RFC 9110 §8.8.3, §13.1.1) for a pet: a strong validator of its
// representation, so that a client can change a pet only if nobody changed it since
// it read it (optimistic concurrency: 412 otherwise).
import { createHash } from 'node:crypto'
import { ApiError } from '../../errors.js'
import type { Pet } from '../../schemas/pet.js'

/** The pet's entity tag: a digest of every field of its representation, quoted. */
export function etagOf(pet: Pet): string {
  const digest = createHash('sha256').update(JSON.stringify([pet.id, pet.name, pet.categoryId, pet.status])).digest('base64url')
  return `"${digest.slice(0, 27)}"`
}

// An entity tag: optional W/, then a quoted string of etagc (no DQUOTE, no controls).
const ENTITY_TAG = /^(W\/)?"[\x21\x23-\x7e\x80-\xff]*"$/

/**
 * The If-Match header as a condition on the pet: undefined when absent. `*` matches any
 * pet that exists; otherwise one of the listed tags must match the pet's by strong
 * comparison, so a weak tag (W/"…") never matches. A malformed header is a 400.
 */
export function ifMatch(header: string | undefined): ((pet: Pet) => boolean) | undefined {
  if (header === undefined) return undefined
  const value = header.trim()
  if (value === '*') return () => true
  const tags = value.split(',').map((tag) => tag.trim())
  if (tags.some((tag) => !ENTITY_TAG.test(tag))) {
    throw new ApiError('invalid_parameter', 'If-Match must be "*" or a list of entity tags, each in double quotes (the ETag of the pet, as sent).', {
      details: [{ field: 'If-Match', message: 'must be "*" or quoted entity tags' }],
    })
  }
  const strong = tags.filter((tag) => !tag.startsWith('W/'))
  return (pet) => strong.includes(etagOf(pet))
}
