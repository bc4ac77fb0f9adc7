// What GET /v1/pets answers for a page the store returned: the pets to send (the
// look-ahead pet dropped) and the Link header of the next page, if any.
//
// A frozen page is one the store shares with every caller until the next commit
// (sqlite-pet-repository's page cache). Its answer cannot change while it lives, so
// it is worked out once, the body already serialized, and kept in a WeakMap keyed by
// the page: it goes when the store drops the page, never later. The body is made by
// the route's own response serializer, so the bytes are the ones Fastify would send
// for the same pets, and the response schema's guarantee holds.
import type { Pet, PetStatus } from '../../schemas/pet.js'
import { encodeCursor } from './cursor.js'

export interface ListPageAnswer {
  /** The pets, or their JSON already serialized (then send it as application/json). */
  body: readonly Pet[] | string
  /** `Link: <…>; rel="next"` (RFC 8288) when more pets match. */
  link: string | undefined
}

export interface ListPageRequest {
  status: PetStatus | undefined
  /** Pets asked for; the page holds one more when a next page exists. */
  limit: number
}

interface Remembered extends ListPageAnswer {
  body: string
  status: PetStatus | undefined
  limit: number
}

export function createListPageAnswers() {
  const remembered = new WeakMap<readonly Pet[], Remembered>()

  function answer(page: readonly Pet[], { status, limit }: ListPageRequest): { body: readonly Pet[]; link: string | undefined } {
    if (page.length <= limit) return { body: page, link: undefined }
    // Concatenated, not URLSearchParams: every part is already URL-safe (a number,
    // a status from the enum, a base64url cursor).
    const statusParam = status ? `&status=${status}` : ''
    const link = `</v1/pets?limit=${limit}${statusParam}&cursor=${encodeCursor(page[limit - 1]!.id)}>; rel="next"`
    return { body: page.slice(0, limit), link }
  }

  return {
    /**
     * The answer for `page`; `serialize` (the route's serializer for 200) is called
     * only for a frozen page not seen before.
     */
    answer(page: readonly Pet[], request: ListPageRequest, serialize: (pets: readonly Pet[]) => string): ListPageAnswer {
      if (!Object.isFrozen(page)) return answer(page, request)
      const known = remembered.get(page)
      // The store keys its pages by status and limit too; checked anyway, as it costs nothing.
      if (known && known.status === request.status && known.limit === request.limit) return known
      const { body, link } = answer(page, request)
      const entry: Remembered = { body: serialize(body), link, status: request.status, limit: request.limit }
      remembered.set(page, entry)
      return entry
    },
  }
}
