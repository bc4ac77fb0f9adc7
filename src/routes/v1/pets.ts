// The pet operations: listPets, createPet and the deprecated getPet.
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { Clock } from '../../clock.js'
import type { Store } from '../../db/store.js'
import { ApiError } from '../../errors.js'
import { createIdempotency } from '../../idempotency/idempotency.js'
import { fingerprint } from '../../idempotency/idempotency-key.js'
import { MAX_SAFE_ID, NewPet, Pet, PetStatusSchema } from '../../schemas/pet.js'
import { errorResponse, header, optionalHeader, response, TOO_MANY_REQUESTS, UNAUTHORIZED } from '../../schemas/responses.js'
import { ref } from '../../schemas/shared.js'
import { decodeCursor } from './cursor.js'
import { createListPageAnswers } from './list-page-answer.js'
import { idempotencyKeyHeaders, listQuery } from './parameters.js'

export interface PetRoutesOptions {
  store: Pick<Store, 'pets' | 'idempotency'>
  clock: Clock
}

// RFC 9745: Deprecation is an @-prefixed Unix time; RFC 8594: Sunset is an HTTP date.
export const GET_PET_DEPRECATED_AT = Date.UTC(2026, 10, 22) // the release of v1.0.0
export const GET_PET_SUNSET_AT = Date.UTC(2030, 11, 5)
const DEPRECATION_HEADERS = {
  deprecation: `@${GET_PET_DEPRECATED_AT / 1000}`,
  sunset: new Date(GET_PET_SUNSET_AT).toUTCString(),
  link: '</v1/pets>; rel="successor-version"',
}

// What Fastify itself sets for a JSON body (lib/reply.js CONTENT_TYPE.JSON).
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/** The listPets 200 body, by the route's own response serializer (the one Fastify would use). */
function serializePage(reply: FastifyReply, pets: readonly Pet[]): string {
  const serialize = reply.getSerializationFunction('200')
  if (!serialize) throw new Error('listPets has no serializer for 200')
  // Typed for objects, but it is the array schema's serializer.
  return serialize(pets as unknown as Record<string, unknown>)
}

const ListQuery = listQuery('animals', PetStatusSchema({ description: 'Only animals with this status.' }))

const PetIdParams = Type.Object({
  petId: Type.Integer({ minimum: 1, maximum: MAX_SAFE_ID, format: 'int64', description: 'Identifier of the animal to retrieve.' }),
})

const deprecationHeaders = {
  Deprecation: header('`@<unix seconds>` (RFC 9745): when this operation was deprecated.'),
  Sunset: header('`Thu, 05 Dec 2030 00:00:00 GMT` (RFC 8594): when it stops working; from then on it answers 410.'),
  Link: header('`</v1/pets>; rel="successor-version"`: the replacement, GET /v1/pets with the status filter.'),
}

const CreateHeaders = idempotencyKeyHeaders({ replays: 'the first response', doesNot: 'creates nothing' })

export async function petRoutes(app: FastifyInstance, { store, clock }: PetRoutesOptions) {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>()
  const { pets } = store
  const idempotency = createIdempotency({ records: store.idempotency, clock })
  const listPageAnswers = createListPageAnswers()

  v1.get(
    '/pets',
    {
      schema: {
        operationId: 'listPets',
        tags: ['pets'],
        summary: 'List animals',
        description:
          'Animals in ascending id order, optionally filtered by status. When more match than were returned, the `Link` header carries the URL of the next page (`rel="next"`); the body stays a bare array.',
        querystring: ListQuery,
        response: {
          200: response('A page of animals.', Type.Array(ref(Pet)), {
            Link: optionalHeader('`</v1/pets?…&cursor=…>; rel="next"` (RFC 8288) when more animals match.'),
          }),
          400: errorResponse('A query parameter is invalid.', ['invalid_parameter']),
          401: UNAUTHORIZED,
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const { limit, status, cursor } = request.query
      const afterId = cursor === undefined ? 0 : decodeCursor(cursor)
      // One more than asked tells whether a next page exists without counting.
      const page = await pets.list({ status, afterId, limit: limit + 1 })
      const answer = listPageAnswers.answer(page, { status, limit }, (pets) => serializePage(reply, pets))
      if (answer.link !== undefined) reply.header('link', answer.link)
      // The cast drops readonly: serializing only reads the pets.
      if (answer.json === undefined) return answer.pets as Pet[]
      // Already JSON: with a JSON content type Fastify sends a string as it is, without
      // serializing it again. (The cast: the schema-typed reply only knows the pets.)
      return reply.header('content-type', JSON_CONTENT_TYPE).send(answer.json as unknown as Pet[])
    },
  )

  v1.post(
    '/pets',
    {
      schema: {
        operationId: 'createPet',
        tags: ['pets'],
        summary: 'Add an animal',
        description:
          'Adds an animal. A 201 means it is stored durably. Unknown fields are refused and values are never coerced. Send an `Idempotency-Key` to make retries safe: a retry of a request whose answer was lost then gets the same 201 (with `Idempotent-Replayed: true`) instead of adding the animal twice.',
        headers: CreateHeaders,
        body: ref(NewPet),
        response: {
          201: response('The animal was added; the body carries its assigned id.', ref(Pet), {
            Location: header('`/v1/pets/{id}`: where the new animal can be read.'),
          }),
          400: errorResponse(
            'The body is not a JSON object, or a field is missing, of the wrong type, out of range or unknown; or the Idempotency-Key header is malformed.',
            ['invalid_body', 'invalid_field', 'invalid_parameter'],
          ),
          409: errorResponse('A request with this Idempotency-Key is still running; retry after `Retry-After` seconds to get its answer.', ['idempotency_key_in_use'], {
            'Retry-After': header('Seconds to wait before retrying.', Type.Integer()),
          }),
          401: UNAUTHORIZED,
          413: errorResponse('The body is larger than 64 KiB.', ['payload_too_large']),
          415: errorResponse('The body is not sent as application/json.', ['unsupported_media_type']),
          422: errorResponse('This Idempotency-Key was already used with a different body; use a new key for a new animal.', ['idempotency_key_reused']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const now = clock.now()
      const answer = await idempotency.run(request, {
        fingerprint: () => fingerprint(request.body),
        write: (completion) => pets.insert(request.body, now, completion),
      })
      if (answer.replayed) reply.header('idempotent-replayed', 'true')
      const pet = answer.replayed ? (answer.body as Pet) : answer.result
      return reply.code(201).header('location', `/v1/pets/${pet.id}`).send(pet)
    },
  )

  v1.get(
    '/pets/:petId',
    {
      // Before validation, so that after the sunset every call answers 410, even a malformed one.
      preValidation: async () => {
        if (clock.now() >= GET_PET_SUNSET_AT) {
          throw new ApiError('gone', 'GET /v1/pets/{petId} was removed on 5 December 2030; use GET /v1/pets with the status filter.')
        }
      },
      onSend: async (_request, reply: FastifyReply) => {
        reply.headers(DEPRECATION_HEADERS)
      },
      schema: {
        operationId: 'getPet',
        tags: ['pets'],
        deprecated: true,
        summary: 'Fetch one animal (deprecated)',
        description:
          'Deprecated: removed on 5 December 2030, after which it answers 410. Use `GET /pets` with the `status` filter instead. Every response carries `Deprecation`, `Sunset` and `Link` headers.',
        params: PetIdParams,
        response: {
          200: response('The animal.', ref(Pet), deprecationHeaders),
          400: errorResponse('petId is not a positive integer.', ['invalid_parameter'], deprecationHeaders),
          401: { ...UNAUTHORIZED, headers: { ...UNAUTHORIZED.headers, ...deprecationHeaders } },
          404: errorResponse('There is no animal with this id.', ['not_found'], deprecationHeaders),
          410: errorResponse('The operation reached its sunset date; use GET /pets.', ['gone'], deprecationHeaders),
          429: { ...TOO_MANY_REQUESTS, headers: { ...TOO_MANY_REQUESTS.headers, ...deprecationHeaders } },
        },
      },
    },
    async (request) => {
      const pet = await pets.find(request.params.petId)
      if (!pet) throw new ApiError('not_found', `There is no pet with id ${request.params.petId}.`)
      return pet
    },
  )
}
