// Where a command writes: stdout and stderr, a line at a time. Tests pass their own.
export interface Io {
  out: (line: string) => void
  err: (line: string) => void
}

export const consoleIo: Io = { out: (line) => console.log(line), err: (line) => console.error(line) }

// C0 and C1 controls, DEL, the line and paragraph separators, and the bidirectional marks and controls that reorder what follows.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNPRINTABLE = /[\u0000-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g

const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`

/**
 * Text from the database as a terminal may show it: a control character is written
 * escaped (`\u001b`), so that a name a tenant chose (a key's) can neither move the
 * cursor, retitle the window, nor forge a row or a column of a table printed to the
 * operator.
 */
export const printable = (text: string): string => text.replace(UNPRINTABLE, escaped)

/**
 * JSON for the terminal: JSON.stringify escapes C0 controls but writes DEL, C1 controls
 * and bidirectional ones as they are; these are escaped too (`\u202e` reads back the same).
 */
export const printableJson = (value: unknown): string => JSON.stringify(value, null, 2).replace(LEFT_BY_JSON, escaped)

// What JSON.stringify leaves as it is of UNPRINTABLE (it escapes C0 itself; the newlines of its indentation are not in strings).
const LEFT_BY_JSON = /[\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g
