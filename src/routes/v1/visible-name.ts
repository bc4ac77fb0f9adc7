// A name must show something: invisible characters alone (a zero-width space, a word
// joiner) pass the schema's "not only white space" (JSON Schema's \S knows no Unicode
// property), and made pets and categories no one could see in a list or a terminal.
import { ApiError } from '../../errors.js'
import { foldName } from '../../vocabulary/category-names.js'

const PRINTABLE_ASCII = /[!-~]/
/** Something to see once folded: not only combining marks (which show on nothing) or the blank Braille pattern and Hangul fillers (which look like space). */
const SHOWS = /[^\p{M}\s\u2800\u3164\u115f\u1160\uffa0]/u

/** Refuses (400 invalid_field) a name of white space and invisible characters alone; undefined (not sent) passes. */
export function refuseInvisibleName(name: string | undefined): void {
  // A printable ASCII character shows: most names end here, without the fold (on a create's path).
  if (name === undefined || PRINTABLE_ASCII.test(name) || SHOWS.test(foldName(name))) return
  const message = 'field "name" must show a character: it holds only white space or invisible ones (zero-width spaces, joiners)'
  throw new ApiError('invalid_field', message, { details: [{ field: 'name', message }] })
}
