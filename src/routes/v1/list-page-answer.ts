// What GET /v1/pets answers for a page the store returned: the pets to send (the
// look-ahead pet dropped) and the Link header of the next page, if any.
//
// A shared page (PetsPage.shared: the store hands this very object to several
// callers) cannot change while it lives, so its answer is worked out once, the body already serialized, and kept in a WeakMap keyed by the page: it
// goes when the store drops the page, never later. The body is made by the route's
// own response serializer, so the bytes are the ones Fastify would send for the
// same pets, and the response schema's guarantee holds.
import type { PetsPage } from '../../db/pets-store.js'
import type { Pet, PetStatus } from '../../schemas/pet.js'
import { pageWithLink } from './cursor.js'

/** The answer to send: the pets, or their JSON already serialized (then sent as application/json as it is). */
export type ListPageAnswer =
  | { pets: readonly Pet[]; json?: undefined; link: string | undefined }
  | { pets?: undefined; json: string; link: string | undefined }

export interface ListPageRequest {
  status: PetStatus | undefined
  /** Pets asked for; the page holds one more when a next page exists. */
  limit: number
}

interface Remembered {
  answer: ListPageAnswer
  status: PetStatus | undefined
  limit: number
}

function answerFor(pets: readonly Pet[], { status, limit }: ListPageRequest): { pets: readonly Pet[]; link: string | undefined } {
  const { items, link } = pageWithLink(pets, { path: '/v1/pets', status, limit })
  return { pets: items, link }
}

export function createListPageAnswers() {
  const remembered = new WeakMap<PetsPage, Remembered>()

  return {
    /** The answer for `page`; `serialize` (the route's serializer for 200) is called only for a shared page not seen before. */
    answer(page: PetsPage, request: ListPageRequest, serialize: (pets: readonly Pet[]) => string): ListPageAnswer {
      if (!page.shared) return answerFor(page.pets, request)
      const known = remembered.get(page)
      // The store keys its pages by status and limit too; checked anyway, as it costs nothing.
      if (known && known.status === request.status && known.limit === request.limit) return known.answer
      const { pets, link } = answerFor(page.pets, request)
      const answer: ListPageAnswer = { json: serialize(pets), link }
      remembered.set(page, { answer, status: request.status, limit: request.limit })
      return answer
    },
  }
}
