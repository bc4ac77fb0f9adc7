// Where a command writes: stdout and stderr, a line at a time. Tests pass their own.
export interface Io {
  out: (line: string) => void
  err: (line: string) => void
}

export const consoleIo: Io = { out: (line) => console.log(line), err: (line) => console.error(line) }

// What a terminal must not be given raw, beyond the C0 controls (which JSON.stringify
// escapes itself): DEL and the C1 controls, the line and paragraph separators, and the
// bidirectional marks and controls that reorder what follows.
const BEYOND_C0 = '\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069'
const UNPRINTABLE = new RegExp(`[\\u0000-\\u001F${BEYOND_C0}]`, 'g')
const LEFT_BY_JSON = new RegExp(`[${BEYOND_C0}]`, 'g')

const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`

/**
 * Text from the database as a terminal may show it: a control character is written
 * escaped (`\u001b`), so that a name a tenant chose (a key's) can neither move the
 * cursor, retitle the window, nor forge a row or a column of a table printed to the
 * operator.
 */
export const printable = (text: string): string => text.replace(UNPRINTABLE, escaped)

/** JSON for the terminal: what JSON.stringify writes as it is (see BEYOND_C0) is escaped too (`\u202e` reads back the same). */
export const printableJson = (value: unknown): string => JSON.stringify(value, null, 2).replace(LEFT_BY_JSON, escaped)
