// Text the stores keep exactly as sent. A NUL or a lone surrogate is refused, not
// altered (decision D3): PostgreSQL cannot store U+0000 and no store keeps a lone
// surrogate, so either would read back otherwise. Ajv compiles patterns with the u
// flag, so a paired surrogate is one code point and passes.
export const STORABLE_TEXT = { not: { type: 'string', pattern: '[\\u0000\\uD800-\\uDFFF]' } } as const

export const STORABLE_TEXT_NOTE = 'valid Unicode without U+0000 (no lone surrogates)'

/**
 * A one-line name shown to people (a pet's, a category's, a key's): storable text
 * without control characters (C0, DEL, C1: a tab, a newline, an escape sequence), the
 * Unicode line and paragraph separators, or
 * the bidirectional controls that reorder what follows (embeddings, overrides,
 * isolates), with which one name could be made to look like another, or to draw over
 * what a terminal or a page shows around it.
 */
export const LABEL_PATTERN = '[\\u0000-\\u001F\\u007F-\\u009F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069\\uD800-\\uDFFF]'
export const LABEL_TEXT = { not: { type: 'string', pattern: LABEL_PATTERN } } as const

export const LABEL_TEXT_NOTE = 'one line of valid Unicode without control characters (U+0000-U+001F, U+007F-U+009F), line or paragraph separators (U+2028, U+2029) or bidirectional controls (U+202A-U+202E, U+2066-U+2069)'
