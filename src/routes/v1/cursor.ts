// Pagination cursors: opaque to clients (they must not build them), a plain
// position for us: the last id of the page. A bad cursor is the client's error.
import { ApiError } from '../../errors.js'

const VERSION = 'p1'

export function encodeCursor(lastId: number): string {
  return Buffer.from(`${VERSION}:${lastId}`).toString('base64url')
}

/** The id after which the next page starts. */
export function decodeCursor(cursor: string): number {
  const text = /^[A-Za-z0-9_-]{1,64}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString() : ''
  const match = /^p1:([1-9][0-9]{0,15})$/.exec(text)
  const id = match ? Number(match[1]) : NaN
  if (!Number.isSafeInteger(id) || encodeCursor(id) !== cursor) {
    throw new ApiError('invalid_parameter', 'parameter "cursor" is not a cursor this service gave out; use the Link rel="next" URL of the previous page as it is.', {
      details: [{ field: 'cursor', message: 'not a valid cursor' }],
    })
  }
  return id
}

/**
 * A keyset page fetched with one item more than `limit` asked for: the items to
 * send, and the RFC 8288 `Link` to the next page when that extra item exists.
 */
export function pageWithLink<T extends { id: number }>(
  items: readonly T[],
  { path, status, limit }: { path: string; status: string | undefined; limit: number },
): { items: readonly T[]; link: string | undefined } {
  if (items.length <= limit) return { items, link: undefined }
  // Concatenated, not URLSearchParams: every part is already URL-safe (a number,
  // a status from an enum, a base64url cursor).
  const statusParam = status ? `&status=${status}` : ''
  return { items: items.slice(0, limit), link: `<${path}?limit=${limit}${statusParam}&cursor=${encodeCursor(items[limit - 1]!.id)}>; rel="next"` }
}
