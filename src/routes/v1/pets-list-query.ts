// GET /v1/pets's query: the filters (each a comma list: `status`, `categoryId`, `ids`)
// and the search and sort, parsed into the store's ListPetsQuery, with one canonical
// form of them (lists sorted, repeats dropped) that the next page's link repeats and
// the cursor is bound to: a cursor used with other filters or another sort is a 400.
import { createHash } from 'node:crypto'
import { Type, type Static } from 'typebox'
import type { ListPetsQuery } from '../../db/pets-store.js'
import { ApiError } from '../../errors.js'
import { PET_SORTS, PET_STATUSES, type Pet, type PetSort, type PetStatus } from '../../schemas/pet.js'
import { parametersWithDefaults } from '../../schemas/shared.js'
import { STORABLE_TEXT } from '../../schemas/text.js'
import { decodeCursor } from './cursor.js'
import { limitParameter } from './parameters.js'

export const MAX_IDS = 100
export const MIN_Q_LENGTH = 3
export const MAX_Q_LENGTH = 100

export const PetsListQuery = parametersWithDefaults(
  Type.Object({
    limit: limitParameter('animals'),
    status: Type.Optional(
      Type.String({ description: 'Only animals with this status, or one of these: `available`, `pending`, `sold`, or a comma-separated list of them (`available,pending`).' }),
    ),
    categoryId: Type.Optional(Type.String({ description: 'Only animals of this category, or of one of these: a category id, or a comma-separated list of them (`1,2`).' })),
    q: Type.Optional(
      Type.String({
        minLength: MIN_Q_LENGTH,
        // No maxLength: the schema would count code points, where the limit counts letters
        // (an accent combined with its letter is one), and tell of its own number. The
        // route checks it (parsePetsListFilters); the request line's own limit bounds the text.
        ...STORABLE_TEXT,
        description: `Only animals whose name contains this text, case-insensitively (a substring, anywhere in the name: \`una\` finds Luna), an accented letter composed or not (NFC or NFD): ${MIN_Q_LENGTH} to ${MAX_Q_LENGTH} characters, an accented letter counted once.`,
      }),
    ),
    ids: Type.Optional(
      Type.String({
        description: `Only these animals: a comma-separated list of up to ${MAX_IDS} ids (\`4,8,15\`), the way to fetch several animals at once. The answer's \`Pet-ETags\` header carries each one's ETag.`,
      }),
    ),
    sort: Type.Optional(
      Type.Unsafe<PetSort>({ type: 'string', enum: [...PET_SORTS], description: 'The order: `id` (ascending, the default), `-id` (newest first), or `name` (by code point, then id).' }),
    ),
    cursor: Type.Optional(
      Type.String({ description: 'Where the page starts: an opaque token from the `Link: rel="next"` header of the previous page, valid only with the same filters and sort.' }),
    ),
  }),
)
export type PetsListQuery = Static<typeof PetsListQuery>

/** The filters and sort of a request, as the store takes them and as the next page's link repeats them. */
export interface PetsListFilters {
  query: Omit<ListPetsQuery, 'afterId' | 'afterName' | 'limit'>
  /** The canonical query string of the filters and sort (`status=…&categoryId=…`), empty without any. */
  canonical: string
}

const invalid = (name: string, message: string) => new ApiError('invalid_parameter', `parameter "${name}" ${message}`, { details: [{ field: name, message: `parameter "${name}" ${message}` }] })

/** A comma list of distinct values, sorted; `parse` names what a bad item must be. */
function commaList<T>(name: string, text: string, parse: (item: string) => T | undefined, mustBe: string, compare: (a: T, b: T) => number): T[] {
  const items = text.split(',').map((item) => {
    const value = parse(item)
    if (value === undefined) throw invalid(name, `must be ${mustBe}, or a comma-separated list of them`)
    return value
  })
  return [...new Set(items)].sort(compare)
}

const positiveId = (item: string): number | undefined => {
  const id = /^[1-9][0-9]{0,15}$/.test(item) ? Number(item) : NaN
  return Number.isSafeInteger(id) ? id : undefined
}
const byNumber = (a: number, b: number) => a - b
const isStatus = (item: string): item is PetStatus => (PET_STATUSES as readonly string[]).includes(item)

export function parsePetsListFilters(raw: PetsListQuery): PetsListFilters {
  const query: PetsListFilters['query'] = {}
  const parts: string[] = []
  if (raw.status !== undefined) {
    const statuses = commaList('status', raw.status, (item) => (isStatus(item) ? item : undefined), `one of ${PET_STATUSES.join(', ')}`, (a, b) => PET_STATUSES.indexOf(a) - PET_STATUSES.indexOf(b))
    query.statuses = statuses
    parts.push(`status=${statuses.join(',')}`)
  }
  if (raw.categoryId !== undefined) {
    query.categoryIds = commaList('categoryId', raw.categoryId, positiveId, 'an integer from 1 to 9007199254740991', byNumber)
    parts.push(`categoryId=${query.categoryIds.join(',')}`)
  }
  if (raw.q !== undefined) {
    // Counted composed, as people count letters: e and a combining accent are one.
    const letters = [...raw.q.normalize('NFC')].length
    if (letters < MIN_Q_LENGTH) throw invalid('q', `must be at least ${MIN_Q_LENGTH} characters long, an accented letter counted once`)
    if (letters > MAX_Q_LENGTH) throw invalid('q', `must be at most ${MAX_Q_LENGTH} characters long, an accented letter counted once`)
    query.q = raw.q
    parts.push(`q=${encodeURIComponent(raw.q)}`)
  }
  if (raw.ids !== undefined) {
    const ids = commaList('ids', raw.ids, positiveId, 'an integer from 1 to 9007199254740991', byNumber)
    if (raw.ids.split(',').length > MAX_IDS) throw invalid('ids', `must list at most ${MAX_IDS} ids`)
    query.ids = ids
    parts.push(`ids=${ids.join(',')}`)
  }
  if (raw.sort !== undefined && raw.sort !== 'id') {
    query.sort = raw.sort
    parts.push(`sort=${raw.sort}`)
  }
  return { query, canonical: parts.join('&') }
}

// The cursor: `p2:<binding>:<id>[:<name>]`, base64url. The binding is a digest of the
// canonical filters: a cursor names its page only among the pets those filters chose.
const VERSION = 'p2'
const bindingOf = (canonical: string) => createHash('sha256').update(canonical).digest('base64url').slice(0, 11)

/** The cursor of the page after `last`, under `filters`. */
export function encodePetsCursor(filters: PetsListFilters, last: Pet): string {
  const name = filters.query.sort === 'name' ? `:${Buffer.from(last.name).toString('base64url')}` : ''
  return Buffer.from(`${VERSION}:${bindingOf(filters.canonical)}:${last.id}${name}`).toString('base64url')
}

const badCursor = (why: string) =>
  new ApiError('invalid_parameter', `parameter "cursor" ${why}; use the Link rel="next" URL of the previous page as it is.`, { details: [{ field: 'cursor', message: why }] })

/** Where the page of `cursor` starts, under `filters`; a 400 for a cursor made for other filters or another sort, or not made here. */
export function decodePetsCursor(filters: PetsListFilters, cursor: string): Pick<ListPetsQuery, 'afterId' | 'afterName'> {
  // Cursors of the release before filters, bound to nothing: still good for what they were made for.
  if (cursor.length <= 64 && Buffer.from(cursor, 'base64url').toString().startsWith('p1:')) {
    const { query } = filters
    if (query.sort !== undefined || query.categoryIds !== undefined || query.q !== undefined || query.ids !== undefined || (query.statuses?.length ?? 0) > 1) {
      throw badCursor('was made for other filters')
    }
    return { afterId: decodeCursor(cursor) }
  }
  const text = /^[A-Za-z0-9_-]{1,2048}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString() : ''
  const match = /^p2:([A-Za-z0-9_-]{11}):([1-9][0-9]{0,15})(?::([A-Za-z0-9_-]*))?$/.exec(text)
  const afterId = match ? Number(match[2]) : NaN
  if (!match || !Number.isSafeInteger(afterId) || Buffer.from(text).toString('base64url') !== cursor) throw badCursor('is not a cursor this service gave out')
  if (match[1] !== bindingOf(filters.canonical)) throw badCursor('was made for other filters or another sort')
  const byName = filters.query.sort === 'name'
  if (byName !== (match[3] !== undefined)) throw badCursor('was made for another sort')
  if (!byName) return { afterId }
  // Not signed, so anyone can write one: its name must be one a store could hold, or
  // PostgreSQL refuses it (a 500) where SQLite compares it.
  const afterName = storableOrUndefined(Buffer.from(match[3]!, 'base64url'))
  if (afterName === undefined) throw badCursor('is not a cursor this service gave out')
  return { afterId, afterName }
}

// ignoreBOM: a name may start with U+FEFF, which the decoder would otherwise drop (the next page would start before that pet again).
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
/** The text of `bytes`, unless they are not UTF-8 or hold a U+0000 (STORABLE_TEXT: UTF-8 has no lone surrogates). */
function storableOrUndefined(bytes: Buffer): string | undefined {
  try {
    const text = utf8.decode(bytes)
    return text.includes('\0') ? undefined : text
  } catch {
    return undefined
  }
}
