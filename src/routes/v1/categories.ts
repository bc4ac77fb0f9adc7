// The category operations: list, read, create, change and delete the kinds of animal
// a pet's categoryId names, over the catalogue (catalogue/catalogue.ts); that a
// category with pets cannot go is the database's rule (db/categories-store.ts).
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { Catalogue, CategoryWriteResult } from '../../catalogue/catalogue.js'
import { ApiError } from '../../errors.js'
import { refuseInvisibleName } from './visible-name.js'
import type { Idempotency } from '../../idempotency/idempotency.js'
import { fingerprintOf } from '../../idempotency/idempotency-key.js'
import { Category, CategoryPatch, NewCategory } from '../../schemas/category.js'
import { idSchema } from '../../schemas/pet.js'
import { BODY_TOO_LARGE, errorResponse, header, idempotencyKeyReused, notJsonBody, optionalHeader, response, TOO_MANY_REQUESTS, UNAUTHORIZED } from '../../schemas/responses.js'
import { ref } from '../../schemas/shared.js'
import { refuseOtherMethods } from '../method-not-allowed.js'
import { decodeCursor, pageWithLink } from './cursor.js'
import { idempotencyKeyHeaders, listQuery } from './parameters.js'

export interface CategoryRoutesOptions {
  categories: Catalogue['categories']
  /** Idempotency-Key on create: the answer is kept in the insert's own transaction. */
  idempotency: Idempotency
}

const CategoryIdParams = Type.Object({ categoryId: idSchema('Identifier of the category.') })
const ListQuery = listQuery('categories')

const BAD_ID = errorResponse('categoryId is not a positive integer.', ['invalid_parameter'])
const NOT_FOUND = errorResponse('There is no category with this id.', ['not_found'])
const NAME_TAKEN = errorResponse('Another category has this name, compared as people read it (case, white space and invisible characters aside); the message names it.', ['category_name_taken'])

const noSuchCategory = (id: number) => new ApiError('not_found', `There is no category with id ${id}.`)

/** The category written, or the refusal as an ApiError. */
function written(name: string | undefined, result: CategoryWriteResult, id?: number): Category {
  if (result.outcome === 'no_such_category') throw noSuchCategory(id!)
  if (result.outcome === 'limit_reached') {
    throw new ApiError('category_limit_reached', `The service keeps at most ${result.limit} categories, and has as many: delete one no pet names, or use one there is (GET /v1/categories).`)
  }
  if (result.outcome === 'name_taken') {
    throw new ApiError('category_name_taken', `The name "${name}" is taken by category ${result.categoryId} (names are compared as people read them: case, white space and invisible characters aside).`, {
      details: [{ field: 'name', message: `taken by category ${result.categoryId}` }],
    })
  }
  return result.category
}

export async function categoryRoutes(app: FastifyInstance, { categories, idempotency }: CategoryRoutesOptions) {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>()

  v1.get(
    '/categories',
    {
      schema: {
        operationId: 'listCategories',
        tags: ['categories'],
        summary: 'List categories',
        description:
          'Categories in ascending id order. When more exist than were returned, the `Link` header carries the URL of the next page (`rel="next"`); the body stays a bare array.',
        querystring: ListQuery,
        response: {
          200: response('A page of categories.', Type.Array(ref(Category)), {
            Link: optionalHeader('`</v1/categories?…&cursor=…>; rel="next"` (RFC 8288) when more categories exist.'),
          }),
          400: errorResponse('A query parameter is invalid.', ['invalid_parameter']),
          401: UNAUTHORIZED,
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query
      const afterId = cursor === undefined ? 0 : decodeCursor(cursor)
      // One more than asked tells whether a next page exists without counting.
      const page = await categories.list({ afterId, limit: limit + 1 })
      const { items, link } = pageWithLink(page, { path: '/v1/categories', status: undefined, limit })
      if (link !== undefined) reply.header('link', link)
      return items as Category[]
    },
  )

  v1.post(
    '/categories',
    {
      schema: {
        operationId: 'createCategory',
        tags: ['categories'],
        summary: 'Add a category',
        description:
          'Adds a category. Names are unique as people read them: case, white space around or doubled, invisible characters and compatibility forms aside (`Cats `, `CATS` and fullwidth `Ｃａｔｓ` are `Cats`). Categories are shared by every account, and the service keeps at most 500 (the operator sets the number: `PETSTORE_MAX_CATEGORIES`); one more is refused with 409 `category_limit_reached`. Send an `Idempotency-Key` to make retries safe: a retry of a create whose answer was lost then gets the same 201 (with `Idempotent-Replayed: true`); without one it gets 409 `category_name_taken` naming the category it made. Unknown fields are refused and values are never coerced.',
        headers: idempotencyKeyHeaders({ replays: 'the first 201', doesNot: 'adds nothing' }),
        body: ref(NewCategory),
        response: {
          201: response('The category was added; the body carries its assigned id.', ref(Category), {
            Location: header('`/v1/categories/{id}`: where the new category can be read.'),
          }),
          400: errorResponse('The body is not a JSON object, or a field is missing, of the wrong type, out of range or unknown; or the Idempotency-Key header is malformed.', ['invalid_body', 'invalid_field', 'invalid_parameter']),
          401: UNAUTHORIZED,
          409: errorResponse(
            'Another category has this name, compared as people read it (`category_name_taken`, the message names it); or the service has as many categories as it keeps (`category_limit_reached`, the message says how many); or a request with this Idempotency-Key is still running (`idempotency_key_in_use`): retry after `Retry-After` seconds.',
            ['category_name_taken', 'category_limit_reached', 'idempotency_key_in_use'],
            { 'Retry-After': optionalHeader('With `idempotency_key_in_use` only: seconds to wait before retrying.', Type.Integer()) },
          ),
          413: BODY_TOO_LARGE,
          415: notJsonBody(),
          422: idempotencyKeyReused('; use a new key for a new category'),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const { name, description = '' } = request.body
      refuseInvisibleName(name)
      const answer = await idempotency.run(request, {
        fingerprint: () => fingerprintOf('createCategory', { name, description }),
        write: (completion) => categories.add(request.body, completion),
        completed: (result) => result.outcome === 'written',
      })
      if (answer.replayed) reply.header('idempotent-replayed', 'true')
      const category = answer.replayed ? (answer.body as Category) : written(name, answer.result)
      return reply.code(201).header('location', `/v1/categories/${category.id}`).send(category)
    },
  )

  v1.get(
    '/categories/:categoryId',
    {
      schema: {
        operationId: 'getCategory',
        tags: ['categories'],
        summary: 'Fetch one category',
        description: 'The category with this id: its name and description.',
        params: CategoryIdParams,
        response: { 200: response('The category.', ref(Category)), 400: BAD_ID, 401: UNAUTHORIZED, 404: NOT_FOUND, 429: TOO_MANY_REQUESTS },
      },
    },
    async (request) => {
      const category = await categories.find(request.params.categoryId)
      if (!category) throw noSuchCategory(request.params.categoryId)
      return category
    },
  )

  v1.patch(
    '/categories/:categoryId',
    {
      schema: {
        operationId: 'updateCategory',
        tags: ['categories'],
        summary: 'Change a category',
        description:
          'Sets the fields given (a JSON Merge Patch, RFC 7396, sent as `application/merge-patch+json` or `application/json`) and keeps the others. The animals of the category keep it: they name its id.',
        consumes: ['application/merge-patch+json', 'application/json'],
        params: CategoryIdParams,
        body: ref(CategoryPatch),
        response: {
          200: response('The category as changed.', ref(Category)),
          400: errorResponse(
            'categoryId is not a positive integer; the body is not a JSON object, has no field, or a field is of the wrong type, out of range, `null` or unknown.',
            ['invalid_body', 'invalid_field', 'invalid_parameter'],
          ),
          401: UNAUTHORIZED,
          404: NOT_FOUND,
          409: NAME_TAKEN,
          413: BODY_TOO_LARGE,
          415: notJsonBody(true),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request) => {
      const { categoryId } = request.params
      refuseInvisibleName(request.body.name)
      return written(request.body.name, await categories.change(categoryId, request.body), categoryId)
    },
  )

  v1.delete(
    '/categories/:categoryId',
    {
      schema: {
        operationId: 'deleteCategory',
        tags: ['categories'],
        summary: 'Delete a category',
        description:
          'Removes a category no animal names. While animals name it, 409 `category_in_use`: move them to another category (`updatePet`) or delete them first. Its id is never given to another category.',
        params: CategoryIdParams,
        response: {
          204: { description: 'The category was deleted.', headers: response('', Type.Null()).headers, type: 'null' },
          400: BAD_ID,
          401: UNAUTHORIZED,
          404: NOT_FOUND,
          409: errorResponse('Animals name this category.', ['category_in_use']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const { categoryId } = request.params
      const result = await categories.remove(categoryId)
      if (result.outcome === 'no_such_category') throw noSuchCategory(categoryId)
      if (result.outcome === 'category_in_use') {
        throw new ApiError('category_in_use', `Animals still name category ${categoryId}: move them to another category (PATCH /v1/pets/{petId}) or delete them first (GET /v1/pets?categoryId=${categoryId} lists them).`)
      }
      return reply.code(204).send(null)
    },
  )

  refuseOtherMethods(app, '/categories', ['GET', 'POST'])
  refuseOtherMethods(app, '/categories/:categoryId', ['GET', 'PATCH', 'DELETE'])
}
