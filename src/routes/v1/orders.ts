// The store operations (decision D10) over HTTP: a schema and a thin handler per
// operation over the order service (orders/order-service.ts). Another account's order
// is the 404 a missing order gets.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ApiError } from '../../errors.js'
import type { Idempotency } from '../../idempotency/idempotency.js'
import { fingerprintOf } from '../../idempotency/idempotency-key.js'
import type { OrderService, PlaceResult } from '../../orders/order-service.js'
import { Inventory, NewOrder, Order, OrderStatusSchema } from '../../schemas/order.js'
import { idSchema } from '../../schemas/pet.js'
import { BODY_TOO_LARGE, errorResponse, header, idempotencyKeyReused, notJsonBody, optionalHeader, response, TOO_MANY_REQUESTS, UNAUTHORIZED } from '../../schemas/responses.js'
import { ref } from '../../schemas/shared.js'
import { refuseOtherMethods } from '../method-not-allowed.js'
import { decodeCursor, pageWithLink } from './cursor.js'
import { idempotencyKeyHeaders, listQuery } from './parameters.js'

export interface OrderRoutesOptions {
  orderService: OrderService
  /** Idempotency-Key: the answer is kept in the reservation's own transaction. */
  idempotency: Idempotency
}

const OrderIdParams = Type.Object({
  orderId: idSchema('Identifier of the order.'),
})

const ListQuery = listQuery('orders', OrderStatusSchema('Only orders with this status.'))

const PlaceHeaders = idempotencyKeyHeaders({
  replays: 'the first 201',
  doesNot: 'reserves nothing',
  more: ' A request that failed (404, 409) does not spend its key.',
})

const orderLocation = { Location: header('`/v1/store/orders/{id}`: where the order can be read.') }
const NOT_YOURS = errorResponse('There is no order with this id of the caller\'s account (another account\'s order is answered the same way).', ['not_found'])
const BAD_ORDER_ID = errorResponse('orderId is not a positive integer.', ['invalid_parameter'])

export async function orderRoutes(app: FastifyInstance, { orderService, idempotency }: OrderRoutesOptions) {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>()
  const noSuchOrder = (orderId: number) => new ApiError('not_found', `There is no order with id ${orderId} of this account.`)

  v1.post(
    '/store/orders',
    {
      schema: {
        operationId: 'placeOrder',
        tags: ['store'],
        summary: 'Reserve an animal',
        description:
          'Reserves an `available` animal for the caller: the order is `placed` and the animal becomes `pending`, in one transaction. However many requests race for one animal, on however many instances, exactly one gets the 201; the others get 409 `pet_unavailable`. Send an `Idempotency-Key` to make retries safe.',
        headers: PlaceHeaders,
        body: ref(NewOrder),
        response: {
          201: response('The animal is reserved; the body is the order.', ref(Order), orderLocation),
          400: errorResponse(
            'The body is not a JSON object, or petId is missing, of the wrong type, out of range, or there are unknown fields; or the Idempotency-Key header is malformed.',
            ['invalid_body', 'invalid_field', 'invalid_parameter'],
          ),
          401: UNAUTHORIZED,
          404: errorResponse('There is no animal with this petId.', ['not_found']),
          409: errorResponse(
            'The animal is not `available` (it is `pending`, reserved by an order or marked so, or `sold`): `pet_unavailable`; or a request with this Idempotency-Key is still running: `idempotency_key_in_use`, retry after `Retry-After` seconds.',
            ['pet_unavailable', 'idempotency_key_in_use'],
            { 'Retry-After': optionalHeader('With `idempotency_key_in_use` only: seconds to wait before retrying.', Type.Integer()) },
          ),
          413: BODY_TOO_LARGE,
          415: notJsonBody(),
          422: idempotencyKeyReused('; use a new key for a new order'),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const { petId } = request.body
      const accountId = request.apiKey!.accountId
      const answer = await idempotency.run(request, {
        fingerprint: () => fingerprintOf('placeOrder', { petId }),
        write: (completion) => orderService.place(accountId, petId, completion),
        completed: (placed) => placed.outcome === 'placed',
      })
      if (answer.replayed) reply.header('idempotent-replayed', 'true')
      const order = answer.replayed ? (answer.body as Order) : placedOrder(petId, answer.result)
      return reply.code(201).header('location', `/v1/store/orders/${order.id}`).send(order)
    },
  )

  v1.get(
    '/store/orders',
    {
      schema: {
        operationId: 'listOrders',
        tags: ['store'],
        summary: 'List your orders',
        description:
          'The orders of the caller\'s account (placed with any of its keys), in ascending id order, optionally filtered by status. When more match than were returned, the `Link` header carries the URL of the next page (`rel="next"`); the body stays a bare array.',
        querystring: ListQuery,
        response: {
          200: response('A page of orders.', Type.Array(ref(Order)), {
            Link: optionalHeader('`</v1/store/orders?…&cursor=…>; rel="next"` (RFC 8288) when more orders match.'),
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
      const page = await orderService.page(request.apiKey!.accountId, { status, afterId, limit: limit + 1 })
      const { items, link } = pageWithLink(page, { path: '/v1/store/orders', status, limit })
      if (link !== undefined) reply.header('link', link)
      return items as Order[]
    },
  )

  v1.get(
    '/store/orders/:orderId',
    {
      schema: {
        operationId: 'getOrder',
        tags: ['store'],
        summary: 'Fetch one of your orders',
        description: 'An order of the caller\'s account. Another account\'s order is answered 404, exactly like a missing one.',
        params: OrderIdParams,
        response: { 200: response('The order.', ref(Order)), 400: BAD_ORDER_ID, 401: UNAUTHORIZED, 404: NOT_YOURS, 429: TOO_MANY_REQUESTS },
      },
    },
    async (request) => {
      const order = await orderService.get(request.apiKey!.accountId, request.params.orderId)
      if (!order) throw noSuchOrder(request.params.orderId)
      return order
    },
  )

  for (const [action, to, operationId, summary, effect] of [
    ['complete', 'completed', 'completeOrder', 'Complete an adoption', 'the order is `completed` and the animal `sold`'],
    ['cancel', 'cancelled', 'cancelOrder', 'Cancel a reservation', 'the order is `cancelled` and the animal `available` again'],
  ] as const) {
    v1.post(
      `/store/orders/:orderId/${action}`,
      {
        schema: {
          operationId,
          tags: ['store'],
          summary,
          description: `Closes a \`placed\` order of the caller: ${effect}, in one transaction. Takes no body. However many requests race to complete or cancel one order, exactly one gets the 200; the others get 409 \`order_closed\`. Repeating it once the order is closed answers 409 \`order_closed\` too.`,
          params: OrderIdParams,
          response: {
            200: response(`The order, now \`${to}\`, with \`closedAt\`.`, ref(Order)),
            400: BAD_ORDER_ID,
            401: UNAUTHORIZED,
            404: NOT_YOURS,
            409: errorResponse('The order is not `placed` any more: it was already completed or cancelled.', ['order_closed']),
            429: TOO_MANY_REQUESTS,
          },
        },
      },
      async (request) => {
        const { orderId } = request.params
        const closed = await orderService.close(request.apiKey!.accountId, orderId, to)
        if (closed.outcome === 'no_such_order') throw noSuchOrder(orderId)
        if (closed.outcome === 'order_closed') throw new ApiError('order_closed', `Order ${orderId} was already ${closed.status}; only a placed order can be ${to}.`)
        return closed.order
      },
    )
  }

  v1.get(
    '/store/inventory',
    {
      schema: {
        operationId: 'getInventory',
        tags: ['store'],
        summary: 'Count the animals by status',
        description: 'The exact number of animals in each status, counted when the request is served.',
        response: { 200: response('The counts.', ref(Inventory)), 401: UNAUTHORIZED, 429: TOO_MANY_REQUESTS },
      },
    },
    async () => orderService.inventory(),
  )

  refuseOtherMethods(app, '/store/orders', ['GET', 'POST'])
  refuseOtherMethods(app, '/store/orders/:orderId', ['GET'])
  refuseOtherMethods(app, '/store/orders/:orderId/complete', ['POST'])
  refuseOtherMethods(app, '/store/orders/:orderId/cancel', ['POST'])
  refuseOtherMethods(app, '/store/inventory', ['GET'])
}

/** The placed order, or the refusal as an ApiError (nothing of the request was committed). */
function placedOrder(petId: number, placed: PlaceResult): Order {
  if (placed.outcome === 'no_such_pet') throw new ApiError('not_found', `There is no pet with id ${petId}.`)
  if (placed.outcome === 'pet_unavailable') {
    const why = placed.status === 'sold' ? 'it is already sold' : placed.status === 'pending' ? 'it is pending (reserved by an order, or marked so when it was added or changed)' : 'another order took it a moment ago'
    throw new ApiError('pet_unavailable', `Pet ${petId} is not available: ${why}.`)
  }
  return placed.order
}
