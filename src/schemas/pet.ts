// One schema per shape: these validate requests, serialize responses, document the
// API in OpenAPI and type the handlers and the client.
import { Type, type Static } from 'typebox'
import { LABEL_TEXT, LABEL_TEXT_NOTE } from './text.js'

export const PET_STATUSES = ['available', 'pending', 'sold'] as const
export type PetStatus = (typeof PET_STATUSES)[number]

/** The orders a list of pets can be in: by id (the default), by id descending, by name (then id). */
export const PET_SORTS = ['id', '-id', 'name'] as const
export type PetSort = (typeof PET_SORTS)[number]

/** Largest integer that crosses JSON safely (2^53 - 1). */
export const MAX_SAFE_ID = Number.MAX_SAFE_INTEGER

/** A stored row's id, as every path, query and body names one: a positive int64 that JSON carries exactly. */
export const idSchema = (description: string, options: { examples?: number[] } = {}) =>
  Type.Integer({ minimum: 1, maximum: MAX_SAFE_ID, format: 'int64', description, ...options })

const description = {
  name: `The animal's name: 1 to 200 characters, not only white space and invisible characters (zero-width spaces, joiners: 400 \`invalid_field\`), ${LABEL_TEXT_NOTE}. Stored and returned exactly as sent.`,
  categoryId: 'Identifier of the category the animal belongs to (`GET /categories`): it must name an existing category.',
  status: 'Availability: `available`, `pending` or `sold`.',
}

export const PetStatusSchema = (options: { description?: string; default?: PetStatus } = {}) =>
  Type.Unsafe<PetStatus>({ type: 'string', enum: [...PET_STATUSES], description: description.status, ...options })

const name = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '\\S',
  ...LABEL_TEXT,
  description: description.name,
  examples: ['Rex'],
})
const categoryId = idSchema(description.categoryId, { examples: [1] })

export const NewPet = Type.Object(
  {
    name,
    categoryId,
    // "Defaults to available" in words only: generators (openapi-typescript) read a
    // schema `default` as "always present" and would make clients send status.
    status: Type.Optional(PetStatusSchema({ description: `${description.status} Optional: \`available\` when omitted.` })),
  },
  {
    $id: 'NewPet',
    additionalProperties: false,
    description: 'An animal to add. Unknown fields (`id` included) are refused, and values are never coerced.',
  },
)
export type NewPet = Static<typeof NewPet>

export const Pet = Type.Object(
  {
    id: idSchema('Unique identifier, assigned by the service: positive and increasing.', { examples: [1] }),
    name,
    categoryId,
    status: PetStatusSchema(),
  },
  { $id: 'Pet', additionalProperties: false, description: 'An animal available for adoption, as returned.' },
)
export type Pet = Static<typeof Pet>

export const PetPatch = Type.Object(
  {
    name: Type.Optional(name),
    categoryId: Type.Optional(categoryId),
    status: Type.Optional(PetStatusSchema()),
  },
  {
    $id: 'PetPatch',
    additionalProperties: false,
    minProperties: 1,
    description:
      'Changes to an animal (a JSON Merge Patch, RFC 7396): the fields given are set, the others kept. At least one field; unknown fields (`id` included) and `null` (every field of an animal is required) are refused, and values are never coerced.',
  },
)
export type PetPatch = Static<typeof PetPatch>
