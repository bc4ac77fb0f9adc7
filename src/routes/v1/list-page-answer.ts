// What GET /v1/pets answers for a page the store returned: the pets to send (the
// look-ahead pet dropped), the Link header of the next page, if any, and with `ids`
// each pet's ETag.
//
// A shared page (PetsPage.shared: the store hands this very object to several
// callers) cannot change while it lives, so its answer is worked out once, the body already serialized, and kept in a WeakMap keyed by the page: it
// goes when the store drops the page, never later. The body is made by the route's
// own response serializer, so the bytes are the ones Fastify would send for the
// same pets, and the response schema's guarantee holds. Its br and gzip bytes are kept
// with it too, made the first time a client asks for them: a shared page is
// compressed once, not once a request.
import type { PetsPage } from '../../db/pets-store.js'
import { COMPRESSION_THRESHOLD, compressFast, encodingFor } from '../../plugins/compression.js'
import type { Pet } from '../../schemas/pet.js'
import { etagOf } from './etag.js'
import { encodePetsCursor, type PetsListFilters } from './pets-list-query.js'

interface Headers {
  link: string | undefined
  /** With `ids`: `<id>=<ETag>` per pet of the page, comma-separated. */
  etags: string | undefined
}

/** The answer to send: the pets, or their JSON already serialized (then sent as application/json as it is). */
export type ListPageAnswer = ({ pets: readonly Pet[]; json?: undefined } | { pets?: undefined; json: string }) & Headers & {
  /** The body's encodings made so far (encodedBody), kept with a shared page's answer. */
  encoded?: { large: boolean; br?: Buffer; gzip?: Buffer }
}

export interface ListPageRequest {
  filters: PetsListFilters
  /** Pets asked for; the page holds one more when a next page exists. */
  limit: number
}

interface Remembered {
  answer: ListPageAnswer
  canonical: string
  limit: number
}

function answerFor(pets: readonly Pet[], { filters, limit }: ListPageRequest): { pets: readonly Pet[] } & Headers {
  const items = pets.length > limit ? pets.slice(0, limit) : pets
  // Concatenated, not URLSearchParams: every part is already URL-safe (numbers, names
  // from enums, q percent-encoded, a base64url cursor).
  const query = filters.canonical ? `&${filters.canonical}` : ''
  const link = pets.length > limit ? `</v1/pets?limit=${limit}${query}&cursor=${encodePetsCursor(filters, items.at(-1)!)}>; rel="next"` : undefined
  const etags = filters.query.ids === undefined ? undefined : items.map((pet) => `${pet.id}=${etagOf(pet)}`).join(', ')
  return { pets: items, link, etags }
}

export function createListPageAnswers() {
  const remembered = new WeakMap<PetsPage, Remembered>()

  return {
    /** The answer for `page`; `serialize` (the route's serializer for 200) is called only for a shared page not seen before. */
    answer(page: PetsPage, request: ListPageRequest, serialize: (pets: readonly Pet[]) => string): ListPageAnswer {
      if (!page.shared) return answerFor(page.pets, request)
      const known = remembered.get(page)
      // The store keys its pages by filters and limit too; checked anyway, as it costs nothing.
      if (known && known.canonical === request.filters.canonical && known.limit === request.limit) return known.answer
      const { pets, ...headers } = answerFor(page.pets, request)
      const answer: ListPageAnswer = { json: serialize(pets), ...headers }
      remembered.set(page, { answer, canonical: request.filters.canonical, limit: request.limit })
      return answer
    },
  }
}

/**
 * What to send of `json`, the body of `answer`, to a client whose Accept-Encoding is
 * `accepted`: the JSON as it is, or its bytes in br or gzip (compressed once, then
 * kept with the answer). Bodies under the threshold go as they are, as
 * @fastify/compress sends them; `varies` says the body depended on Accept-Encoding.
 */
export function encodedBody(answer: ListPageAnswer, json: string, accepted: string | undefined): { body: string | Buffer; encoding: 'br' | 'gzip' | undefined; varies: boolean } {
  const encoded = (answer.encoded ??= { large: Buffer.byteLength(json) >= COMPRESSION_THRESHOLD })
  if (!encoded.large) return { body: json, encoding: undefined, varies: false }
  const encoding = encodingFor(accepted)
  if (encoding === undefined) return { body: json, encoding, varies: true }
  return { body: (encoded[encoding] ??= compressFast(Buffer.from(json), encoding)), encoding, varies: true }
}
