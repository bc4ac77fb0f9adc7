// Text the stores keep exactly as sent. A NUL or a lone surrogate is refused, not
// altered (decision D3): PostgreSQL cannot store U+0000 and no store keeps a lone
// surrogate, so either would read back otherwise. Ajv compiles patterns with the u
// flag, so a paired surrogate is one code point and passes.
export const STORABLE_TEXT = { not: { type: 'string', pattern: '[\\u0000\\uD800-\\uDFFF]' } } as const

export const STORABLE_TEXT_NOTE = 'valid Unicode without U+0000 (no lone surrogates)'
