// What kind of animal a pet is: every pet's categoryId names one of these.
import { Type, type Static } from 'typebox'
import { idSchema } from './pet.js'
import { LABEL_TEXT, LABEL_TEXT_NOTE, STORABLE_TEXT } from './text.js'

const name = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '\\S',
  ...LABEL_TEXT,
  description: `The category's name: 1 to 100 characters, not only white space, ${LABEL_TEXT_NOTE}. Unique as people read it: case, white space around or doubled, invisible characters and compatibility forms aside (\`Cats\`, \`CATS \` and fullwidth \`Ｃａｔｓ\` are one name). Stored and returned exactly as sent.`,
  examples: ['Cats'],
})
const description = Type.String({ maxLength: 1000, ...STORABLE_TEXT, description: 'What the category holds, for people: up to 1000 characters; empty when not given.' })

export const Category = Type.Object(
  {
    id: idSchema('Unique identifier, assigned by the service: what a pet\'s `categoryId` names.', { examples: [2] }),
    name,
    description,
  },
  { $id: 'Category', additionalProperties: false, description: 'A category of animals, as returned.' },
)
export type Category = Static<typeof Category>

export const NewCategory = Type.Object(
  { name, description: Type.Optional(description) },
  { $id: 'NewCategory', additionalProperties: false, description: 'A category to add. Unknown fields (`id` included) are refused, and values are never coerced.' },
)
export type NewCategory = Static<typeof NewCategory>

export const CategoryPatch = Type.Object(
  { name: Type.Optional(name), description: Type.Optional(description) },
  {
    $id: 'CategoryPatch',
    additionalProperties: false,
    minProperties: 1,
    description: 'Changes to a category (a JSON Merge Patch, RFC 7396): the fields given are set, the others kept. At least one field; unknown fields and `null` are refused.',
  },
)
export type CategoryPatch = Static<typeof CategoryPatch>
