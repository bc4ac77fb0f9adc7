// The pet operations: listPets, createPet and the deprecated getPet.
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { Catalogue, ChangeResult, InsertResult } from '../../catalogue/catalogue.js'
import type { Clock } from '../../clock.js'
import { ApiError } from '../../errors.js'
import type { ListPetsQuery } from '../../db/pets-store.js'
import type { Idempotency } from '../../idempotency/idempotency.js'
import { fingerprint } from '../../idempotency/idempotency-key.js'
import { idSchema, NewPet, Pet, PetPatch } from '../../schemas/pet.js'
import { BODY_TOO_LARGE, errorResponse, header, idempotencyKeyReused, notJsonBody, optionalHeader, response, TOO_MANY_REQUESTS, UNAUTHORIZED } from '../../schemas/responses.js'
import { ref } from '../../schemas/shared.js'
import { decodePetsCursor, parsePetsListFilters, PetsListQuery } from './pets-list-query.js'
import { etagOf, ifMatch } from './etag.js'
import { refuseInvisibleName } from './visible-name.js'
import { createListPageAnswers, encodedBody } from './list-page-answer.js'
import { idempotencyKeyHeaders } from './parameters.js'

export interface PetRoutesOptions {
  pets: Catalogue['pets']
  /** Idempotency-Key: the answer is kept in the create's own transaction. */
  idempotency: Idempotency
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

const PetIdParams = Type.Object({
  petId: idSchema('Identifier of the animal to retrieve.'),
})

const ChangeParams = Type.Object({
  petId: idSchema('Identifier of the animal.'),
})

const IfMatchHeaders = Type.Object({
  'If-Match': Type.Optional(
    Type.String({
      description:
        'Optimistic concurrency (RFC 9110): the `ETag` of the animal as the client last read it (from `updatePet` or `getPet`), or `*`. When the animal has changed since, nothing is written and the answer is 412.',
    }),
  ),
})

const etagHeader = { ETag: header('A strong entity tag of the animal as returned (RFC 9110): send it back in `If-Match` to change the animal only if nobody else did meanwhile.') }

const PET_IN_ORDER = errorResponse('An open (`placed`) order holds the animal: its status cannot change, nor can it be deleted, until the order is completed or cancelled. The message names the order when it is the caller\'s account\'s, and no order of another account.', ['pet_in_order'])
const PRECONDITION_FAILED = errorResponse('`If-Match` names another version of the animal: it changed since the client read it. Read it again (its current `ETag`) and decide anew.', ['precondition_failed'])

/** The 400 of a pet naming a category that does not exist. */
const noSuchCategory = (categoryId: number) =>
  new ApiError('invalid_field', `There is no category with id ${categoryId}: name one of GET /v1/categories, or create it first.`, {
    details: [{ field: 'categoryId', message: `no category with id ${categoryId}` }],
  })

/** The pet created, or the refusal as an ApiError (nothing was committed). */
function createdPet(result: InsertResult, categoryId: number): Pet {
  if (result.outcome === 'no_such_category') throw noSuchCategory(categoryId)
  return result.pet
}

/** A refused change as the ApiError it answers, to a caller of account `accountId`. */
function refusal(petId: number, result: ChangeResult<never>, accountId: number, categoryId: number | undefined): ApiError {
  if (result.outcome === 'no_such_category') return noSuchCategory(categoryId!)
  if (result.outcome === 'no_such_pet') return new ApiError('not_found', `There is no pet with id ${petId}.`)
  if (result.outcome === 'pet_in_order') {
    // Another account's order is not the caller's to see, nor its id to learn.
    if (result.accountId !== accountId) return new ApiError('pet_in_order', `Pet ${petId} is held by an open order of another account: it cannot change until that order is completed or cancelled.`)
    return new ApiError('pet_in_order', `Pet ${petId} is held by open order ${result.orderId}: complete or cancel the order first (POST /v1/store/orders/${result.orderId}/complete or …/cancel).`)
  }
  return new ApiError('precondition_failed', `Pet ${petId} has changed since the ETag in If-Match was read; its current ETag is ${etagOf(result.current)}.`)
}

const deprecationHeaders = {
  Deprecation: header('`@<unix seconds>` (RFC 9745): when this operation was deprecated.'),
  Sunset: header('`Thu, 05 Dec 2030 00:00:00 GMT` (RFC 8594): when it stops working; from then on it answers 410.'),
  Link: header('`</v1/pets>; rel="successor-version"`: the replacement, GET /v1/pets with the status filter.'),
}

const CreateHeaders = idempotencyKeyHeaders({ replays: 'the first response', doesNot: 'creates nothing' })

/**
 * Lists that may read many pets for a page (a search, a name order with a filter): the
 * store bounds how many run or wait on an instance (db/gate.ts), and this bounds one
 * account's share of them, so that a tenant's searches cannot take every place and have
 * everyone else's answered 503.
 */
const costly = (query: ListPetsQuery) => query.q !== undefined || (query.sort === 'name' && (query.statuses !== undefined || query.categoryIds !== undefined))
const COSTLY_AT_ONCE_PER_ACCOUNT = 2

export async function petRoutes(app: FastifyInstance, { pets, idempotency, clock }: PetRoutesOptions) {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>()
  const listPageAnswers = createListPageAnswers()
  const costlyUnderWay = new Map<number, number>()
  async function oneOfAccount<T>(accountId: number, list: () => Promise<T>): Promise<T> {
    const underWay = costlyUnderWay.get(accountId) ?? 0
    if (underWay >= COSTLY_AT_ONCE_PER_ACCOUNT) {
      throw new ApiError('rate_limited', `This account has ${underWay} searches (or filtered name-ordered lists) under way on this instance, as many as it may at once: wait for one to end.`, { headers: { 'retry-after': '1' } })
    }
    costlyUnderWay.set(accountId, underWay + 1)
    try {
      return await list()
    } finally {
      const left = costlyUnderWay.get(accountId)! - 1
      if (left === 0) costlyUnderWay.delete(accountId)
      else costlyUnderWay.set(accountId, left)
    }
  }

  v1.get(
    '/pets',
    {
      // Compressed by the route, once per cached page (list-page-answer.ts): not by @fastify/compress once a request.
      compress: false,
      schema: {
        operationId: 'listPets',
        tags: ['pets'],
        summary: 'List animals',
        description:
          'Animals in ascending id order (or as `sort` says), filtered by any of `status`, `categoryId`, `q` (a case-insensitive substring of the name) and `ids`, all of which must hold. When more match than were returned, the `Link` header carries the URL of the next page (`rel="next"`), with the same filters; its cursor is valid only with them. The body stays a bare array.',
        querystring: PetsListQuery,
        response: {
          200: response('A page of animals.', Type.Array(ref(Pet)), {
            Link: optionalHeader('`</v1/pets?…&cursor=…>; rel="next"` (RFC 8288) when more animals match.'),
            'Pet-ETags': optionalHeader('With `ids` only: `<id>=<ETag>` for each animal of the page, comma-separated (`4="…", 8="…"`): send one back in `If-Match` to change that animal only if nobody else did meanwhile.'),
          }),
          400: errorResponse('A query parameter is invalid, or the cursor was made for other filters or another sort.', ['invalid_parameter']),
          401: UNAUTHORIZED,
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query
      const filters = parsePetsListFilters(request.query)
      const position = cursor === undefined ? { afterId: 0 } : decodePetsCursor(filters, cursor)
      // One more than asked tells whether a next page exists without counting.
      const query = { ...filters.query, ...position, limit: limit + 1 }
      const page = costly(query) ? await oneOfAccount(request.apiKey!.accountId, () => pets.list(query)) : await pets.list(query)
      const answer = listPageAnswers.answer(page, { filters, limit }, (pets) => serializePage(reply, pets))
      if (answer.link !== undefined) reply.header('link', answer.link)
      if (answer.etags !== undefined) reply.header('pet-etags', answer.etags)
      const { body, encoding, varies } = encodedBody(answer, answer.json ?? serializePage(reply, answer.pets), request.headers['accept-encoding'])
      if (varies) reply.header('vary', 'accept-encoding')
      if (encoding !== undefined) reply.header('content-encoding', encoding)
      // Already JSON (or its compressed bytes): with a JSON content type Fastify sends it
      // as it is, without serializing it again. (The cast: the schema-typed reply only knows the pets.)
      return reply.header('content-type', JSON_CONTENT_TYPE).send(body as unknown as Pet[])
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
            'The body is not a JSON object, or a field is missing, of the wrong type, out of range or unknown; `categoryId` names no category (`invalid_field`, the field in `details`); or the Idempotency-Key header is malformed.',
            ['invalid_body', 'invalid_field', 'invalid_parameter'],
          ),
          409: errorResponse('A request with this Idempotency-Key is still running; retry after `Retry-After` seconds to get its answer.', ['idempotency_key_in_use'], {
            'Retry-After': header('Seconds to wait before retrying.', Type.Integer()),
          }),
          401: UNAUTHORIZED,
          413: BODY_TOO_LARGE,
          415: notJsonBody(),
          422: idempotencyKeyReused('; use a new key for a new animal'),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      refuseInvisibleName(request.body.name)
      const answer = await idempotency.run(request, {
        fingerprint: () => fingerprint(request.body),
        write: (completion) => pets.add(request.body, completion),
        completed: (result) => result.outcome === 'created',
      })
      if (answer.replayed) reply.header('idempotent-replayed', 'true')
      const pet = answer.replayed ? (answer.body as Pet) : createdPet(answer.result, request.body.categoryId)
      return reply.code(201).header('location', `/v1/pets/${pet.id}`).send(pet)
    },
  )

  v1.get(
    '/pets/:petId',
    {
      // Before validation, so that after the sunset every call answers 410, even a malformed one.
      preValidation: async () => {
        if (clock.now() >= GET_PET_SUNSET_AT) {
          throw new ApiError('gone', 'GET /v1/pets/{petId} was removed on 5 December 2030; use GET /v1/pets?ids={petId} (or its other filters).')
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
          'Deprecated: removed on 5 December 2030, after which it answers 410. Use `GET /pets` instead: `ids=4,8,15` fetches given animals (with their ETags in `Pet-ETags`), `status`, `categoryId` and `q` find them. Every response carries `Deprecation`, `Sunset` and `Link` headers.',
        params: PetIdParams,
        response: {
          200: response('The animal.', ref(Pet), { ...deprecationHeaders, ...etagHeader }),
          400: errorResponse('petId is not a positive integer.', ['invalid_parameter'], deprecationHeaders),
          401: { ...UNAUTHORIZED, headers: { ...UNAUTHORIZED.headers, ...deprecationHeaders } },
          404: errorResponse('There is no animal with this id.', ['not_found'], deprecationHeaders),
          410: errorResponse('The operation reached its sunset date; use GET /pets.', ['gone'], deprecationHeaders),
          429: { ...TOO_MANY_REQUESTS, headers: { ...TOO_MANY_REQUESTS.headers, ...deprecationHeaders } },
        },
      },
    },
    async (request, reply) => {
      const pet = await pets.find(request.params.petId)
      if (!pet) throw new ApiError('not_found', `There is no pet with id ${request.params.petId}.`)
      reply.header('etag', etagOf(pet))
      return pet
    },
  )

  v1.patch(
    '/pets/:petId',
    {
      schema: {
        operationId: 'updatePet',
        tags: ['pets'],
        summary: 'Change an animal',
        description:
          'Sets the fields given (a JSON Merge Patch, RFC 7396, sent as `application/merge-patch+json` or `application/json`) and keeps the others: correct a name or a category, or change the status, e.g. make an animal created `pending` `available` again. While an open order holds the animal its status cannot change here (409 `pet_in_order`, naming the order): complete or cancel the order instead. Idempotent: sending the same patch again changes nothing more. With `If-Match` it changes the animal only if it is still the version the client read (412 otherwise). The answer carries the new `ETag`.',
        consumes: ['application/merge-patch+json', 'application/json'],
        params: ChangeParams,
        headers: IfMatchHeaders,
        body: ref(PetPatch),
        response: {
          200: response('The animal as changed.', ref(Pet), etagHeader),
          400: errorResponse(
            'petId is not a positive integer; the body is not a JSON object, has no field, or a field is of the wrong type, out of range, `null` or unknown; `categoryId` names no category (`invalid_field`); or If-Match is malformed.',
            ['invalid_body', 'invalid_field', 'invalid_parameter'],
          ),
          401: UNAUTHORIZED,
          404: errorResponse('There is no animal with this id (or it was deleted).', ['not_found']),
          409: PET_IN_ORDER,
          412: PRECONDITION_FAILED,
          413: BODY_TOO_LARGE,
          415: notJsonBody(true),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const { petId } = request.params
      refuseInvisibleName(request.body.name)
      const result = await pets.change(petId, request.body, ifMatch(request.headers['if-match']))
      if (result.outcome !== 'updated') throw refusal(petId, result, request.apiKey!.accountId, request.body.categoryId)
      return reply.header('etag', etagOf(result.pet)).send(result.pet)
    },
  )

  v1.delete(
    '/pets/:petId',
    {
      schema: {
        operationId: 'deletePet',
        tags: ['pets'],
        summary: 'Delete an animal',
        description:
          'Removes an animal that no open order holds: it leaves the lists, the inventory and `getPet` (404), and its id is never given to another animal. Orders that named it keep its `petId`. With an open order, 409 `pet_in_order`. Deleting it again answers 404, as for any missing animal. `If-Match` makes the deletion conditional, as for `updatePet`.',
        params: ChangeParams,
        headers: IfMatchHeaders,
        response: {
          204: { description: 'The animal was deleted.', headers: response('', Type.Null()).headers, type: 'null' },
          400: errorResponse('petId is not a positive integer, or If-Match is malformed.', ['invalid_parameter']),
          401: UNAUTHORIZED,
          404: errorResponse('There is no animal with this id (or it was deleted already).', ['not_found']),
          409: PET_IN_ORDER,
          412: PRECONDITION_FAILED,
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const { petId } = request.params
      const result = await pets.remove(petId, ifMatch(request.headers['if-match']))
      if (result.outcome !== 'removed') throw refusal(petId, result, request.apiKey!.accountId, undefined)
      return reply.code(204).send(null)
    },
  )
}
