// Events and webhook endpoints. An endpoint belongs to the account whose key made it,
// as orders do: another account's is a 404. Events are written by the database with the
// changes they report (the outbox, migration 2026-11-24-007); deliveries are the
// dispatchers' (webhooks/dispatcher.ts), never a request's.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { Clock } from '../../clock.js'
import type { StoredEndpoint, WebhooksStore } from '../../db/webhooks-store.js'
import { ApiError } from '../../errors.js'
import { EVENT_TYPES, parseEventId, renderEvent, TEST_EVENT } from '../../webhooks/events.js'
import { checkUrl, OutboundRefused, type Cidr } from '../../webhooks/outbound.js'
import { newSecret } from '../../webhooks/signature.js'
import { DeliveryAttempt, EventSchema, NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch } from '../../schemas/webhook.js'
import { idSchema } from '../../schemas/pet.js'
import { errorResponse, header, optionalHeader, response, TOO_MANY_REQUESTS, UNAUTHORIZED } from '../../schemas/responses.js'
import { parametersWithDefaults, ref } from '../../schemas/shared.js'
import { refuseOtherMethods } from '../method-not-allowed.js'
import { decodeCursor, encodeCursor } from './cursor.js'
import { DEFAULT_LIMIT, MAX_LIMIT, noBodyIsEmptyObject } from './parameters.js'

export interface WebhookRoutesOptions {
  webhooks: WebhooksStore
  clock: Clock
  /** http:// URLs are accepted outside production. */
  allowHttp: boolean
  allowed: readonly Cidr[]
  /** Wakes this instance's dispatcher (a test event, a redelivery): sent now rather than at the next poll. */
  wake: () => void
}

const MAX_GRACE_S = 7 * 86_400
const EndpointParams = Type.Object({ endpointId: idSchema('Identifier of the endpoint.') })
const EventParams = Type.Object({ eventId: Type.String({ pattern: '^evt_[0-9]{1,16}$', description: 'The event id, `evt_…`.', examples: ['evt_1'] }) })
const EventsQuery = parametersWithDefaults(
  Type.Object({
    limit: Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: 'Maximum number of events to return.' }),
    type: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: [...EVENT_TYPES, TEST_EVENT], description: 'Only events of this type.' })),
    cursor: Type.Optional(Type.String({ description: 'Where the page starts (older events): an opaque token from the `Link: rel="next"` header of the previous page.' })),
  }),
)
const RotateBody = Type.Object(
  { grace: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_GRACE_S, default: 86_400, description: 'Seconds the old secret keeps signing beside the new one: default 24 hours, at most 7 days.' })) },
  { additionalProperties: false },
)

const NO_ENDPOINT = errorResponse('There is no endpoint with this id of this account.', ['not_found'])
const BAD_ID = errorResponse('endpointId is not a positive integer.', ['invalid_parameter'])
const BAD_ENDPOINT = errorResponse('The body is not a JSON object of the documented fields, or the URL is refused (not https, or not a public address).', ['invalid_body', 'invalid_field'])

function view(endpoint: StoredEndpoint, secret?: string): WebhookEndpoint {
  return {
    id: endpoint.id,
    url: endpoint.url,
    description: endpoint.description,
    enabledEvents: endpoint.enabledEvents.split(' '),
    status: endpoint.disabledAt === null ? 'enabled' : 'disabled',
    disabledAt: endpoint.disabledAt === null ? null : new Date(endpoint.disabledAt).toISOString(),
    createdAt: new Date(endpoint.createdAt).toISOString(),
    ...(secret === undefined ? {} : { secret }),
  }
}

export async function webhookRoutes(app: FastifyInstance, { webhooks, clock, allowHttp, allowed, wake }: WebhookRoutesOptions) {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>()
  const noEndpoint = (id: number) => new ApiError('not_found', `There is no webhook endpoint with id ${id} of this account.`)
  /** The caller's account's endpoint, or the 404 another account's gets too. */
  async function ownEndpoint(accountId: number, id: number): Promise<StoredEndpoint> {
    const endpoint = await webhooks.endpoint(accountId, id)
    if (!endpoint) throw noEndpoint(id)
    return endpoint
  }

  async function checked(url: string): Promise<string> {
    try {
      return (await checkUrl(url, { allowHttp, allowed })).href
    } catch (error) {
      if (error instanceof OutboundRefused) throw new ApiError('invalid_field', `${error.message}.`, { details: [{ field: 'url', message: error.message }] })
      throw error
    }
  }
  const eventsList = (events: readonly string[]) => (events.includes('*') ? '*' : [...events].sort().join(' '))

  v1.get(
    '/events',
    {
      schema: {
        operationId: 'listEvents',
        tags: ['webhooks'],
        summary: 'List events',
        description:
          'The caller\'s events (its orders\', its endpoints\') and every pet event, newest first, for 30 days: the way to catch up after a receiver was down. `Link: rel="next"` leads to older ones.',
        querystring: EventsQuery,
        response: {
          200: response('A page of events, newest first.', Type.Array(ref(EventSchema)), { Link: optionalHeader('`</v1/events?…&cursor=…>; rel="next"` when older events match.') }),
          400: errorResponse('A query parameter is invalid.', ['invalid_parameter']),
          401: UNAUTHORIZED,
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const { limit, type, cursor } = request.query
      const events = await webhooks.events({ accountId: request.apiKey!.accountId, type, beforeId: cursor === undefined ? undefined : decodeCursor(cursor), limit: limit + 1 })
      if (events.length > limit) {
        reply.header('link', `</v1/events?limit=${limit}${type ? `&type=${type}` : ''}&cursor=${encodeCursor(events[limit - 1]!.id)}>; rel="next"`)
      }
      return events.slice(0, limit).map(renderEvent)
    },
  )

  v1.post(
    '/events/:eventId/redeliver',
    {
      schema: {
        operationId: 'redeliverEvent',
        tags: ['webhooks'],
        summary: 'Send an event again',
        description: 'Queues the event again for each of the caller\'s enabled endpoints subscribed to its type; they get it within a second, with the same `webhook-id`.',
        params: EventParams,
        response: {
          202: response('Queued.', Type.Object({ deliveries: Type.Integer({ minimum: 0, description: 'How many endpoints it was queued for.' }) }, { additionalProperties: false })),
          400: errorResponse('eventId is malformed.', ['invalid_parameter']),
          401: UNAUTHORIZED,
          404: errorResponse('There is no such event this account may see.', ['not_found']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const accountId = request.apiKey!.accountId
      const id = parseEventId(request.params.eventId)
      const event = id === undefined ? undefined : await webhooks.event(id)
      if (!event || (event.accountId !== null && event.accountId !== accountId)) throw new ApiError('not_found', `There is no event ${request.params.eventId} for this account.`)
      const targets = (await webhooks.endpoints(accountId)).filter(
        (endpoint) => endpoint.disabledAt === null && (endpoint.enabledEvents === '*' || endpoint.enabledEvents.split(' ').includes(event.type)),
      )
      for (const endpoint of targets) await webhooks.enqueue(endpoint.id, event.id, clock.now())
      wake()
      return reply.code(202).send({ deliveries: targets.length })
    },
  )

  v1.post(
    '/webhook-endpoints',
    {
      schema: {
        operationId: 'createWebhookEndpoint',
        tags: ['webhooks'],
        summary: 'Make a webhook endpoint',
        description:
          'Starts sending the listed events to `url`, signed with a new secret (in this response alone). The URL must be https (http outside production) and resolve to public addresses only.',
        body: ref(NewWebhookEndpoint),
        response: {
          201: response('The endpoint, with its secret.', ref(WebhookEndpoint), { Location: header('`/v1/webhook-endpoints/{id}`.') }),
          400: BAD_ENDPOINT,
          401: UNAUTHORIZED,
          413: errorResponse('The body is larger than 64 KiB.', ['payload_too_large']),
          415: errorResponse('The body is not sent as application/json.', ['unsupported_media_type']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const { url, enabledEvents, description = '' } = request.body
      const secret = newSecret()
      const endpoint = await webhooks.insertEndpoint({ accountId: request.apiKey!.accountId, url: await checked(url), description, enabledEvents: eventsList(enabledEvents), secret }, clock.now())
      return reply.code(201).header('location', `/v1/webhook-endpoints/${endpoint.id}`).send(view(endpoint, secret))
    },
  )

  v1.get(
    '/webhook-endpoints',
    {
      schema: {
        operationId: 'listWebhookEndpoints',
        tags: ['webhooks'],
        summary: 'List your webhook endpoints',
        description: 'The endpoints of the caller\'s account, by id; never their secrets.',
        response: { 200: response('The endpoints.', Type.Array(ref(WebhookEndpoint))), 401: UNAUTHORIZED, 429: TOO_MANY_REQUESTS },
      },
    },
    async (request) => (await webhooks.endpoints(request.apiKey!.accountId)).map((endpoint) => view(endpoint)),
  )

  v1.get(
    '/webhook-endpoints/:endpointId',
    {
      schema: {
        operationId: 'getWebhookEndpoint',
        tags: ['webhooks'],
        summary: 'Read a webhook endpoint',
        description: 'One of the caller\'s endpoints, never its secret.',
        params: EndpointParams,
        response: { 200: response('The endpoint.', ref(WebhookEndpoint)), 400: BAD_ID, 401: UNAUTHORIZED, 404: NO_ENDPOINT, 429: TOO_MANY_REQUESTS },
      },
    },
    async (request) => {
      const endpoint = await ownEndpoint(request.apiKey!.accountId, request.params.endpointId)
      return view(endpoint)
    },
  )

  v1.patch(
    '/webhook-endpoints/:endpointId',
    {
      schema: {
        operationId: 'updateWebhookEndpoint',
        tags: ['webhooks'],
        summary: 'Change a webhook endpoint',
        description: 'Changes the fields given: url (checked as on creation), enabledEvents, description, and `enabled`.',
        params: EndpointParams,
        body: ref(WebhookEndpointPatch),
        response: {
          200: response('The endpoint as changed.', ref(WebhookEndpoint)),
          400: BAD_ENDPOINT,
          401: UNAUTHORIZED,
          404: NO_ENDPOINT,
          413: errorResponse('The body is larger than 64 KiB.', ['payload_too_large']),
          415: errorResponse('The body is not sent as application/json or application/merge-patch+json.', ['unsupported_media_type']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request) => {
      const { url, enabledEvents, description, enabled } = request.body
      const changed = await webhooks.updateEndpoint(request.apiKey!.accountId, request.params.endpointId, {
        ...(url === undefined ? {} : { url: await checked(url) }),
        ...(enabledEvents === undefined ? {} : { enabledEvents: eventsList(enabledEvents) }),
        ...(description === undefined ? {} : { description }),
        ...(enabled === undefined ? {} : { disabledAt: enabled ? null : clock.now() }),
      })
      if (!changed) throw noEndpoint(request.params.endpointId)
      return view(changed)
    },
  )

  v1.delete(
    '/webhook-endpoints/:endpointId',
    {
      schema: {
        operationId: 'deleteWebhookEndpoint',
        tags: ['webhooks'],
        summary: 'Delete a webhook endpoint',
        description: 'Deletes the endpoint; what was queued for it is not sent. Its events stay in `GET /events`.',
        params: EndpointParams,
        response: { 204: { description: 'Deleted.', headers: response('', Type.Null()).headers, type: 'null' }, 400: BAD_ID, 401: UNAUTHORIZED, 404: NO_ENDPOINT, 429: TOO_MANY_REQUESTS },
      },
    },
    async (request, reply) => {
      if (!(await webhooks.deleteEndpoint(request.apiKey!.accountId, request.params.endpointId))) throw noEndpoint(request.params.endpointId)
      return reply.code(204).send(null)
    },
  )

  v1.post(
    '/webhook-endpoints/:endpointId/rotate-secret',
    {
      preValidation: noBodyIsEmptyObject,
      schema: {
        operationId: 'rotateWebhookSecret',
        tags: ['webhooks'],
        summary: 'Rotate the signing secret',
        description:
          'A new secret (in this response alone) signs every delivery from now on; the old one also signs them, as a second signature in `webhook-signature`, for the grace period, so receivers can switch without losing a delivery.',
        params: EndpointParams,
        body: RotateBody,
        response: {
          200: response('The endpoint, with its new secret.', ref(WebhookEndpoint)),
          400: errorResponse('endpointId or grace is invalid.', ['invalid_parameter', 'invalid_body', 'invalid_field']),
          401: UNAUTHORIZED,
          404: NO_ENDPOINT,
          415: errorResponse('A body was sent, not as application/json.', ['unsupported_media_type']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request) => {
      const secret = newSecret()
      const grace = request.body.grace ?? 86_400
      const rotated = await webhooks.rotateSecret(request.apiKey!.accountId, request.params.endpointId, secret, clock.now() + grace * 1000)
      if (!rotated) throw noEndpoint(request.params.endpointId)
      return view(rotated, secret)
    },
  )

  v1.post(
    '/webhook-endpoints/:endpointId/test',
    {
      schema: {
        operationId: 'testWebhookEndpoint',
        tags: ['webhooks'],
        summary: 'Send a test event',
        description: `Sends a \`${TEST_EVENT}\` event to this endpoint now (whatever it subscribes to), signed as every delivery; its attempts show in \`GET …/deliveries\`.`,
        params: EndpointParams,
        response: {
          202: response('Queued; it is sent within a second.', ref(EventSchema)),
          400: BAD_ID,
          401: UNAUTHORIZED,
          404: NO_ENDPOINT,
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const endpoint = await ownEndpoint(request.apiKey!.accountId, request.params.endpointId)
      const data = JSON.stringify(view(endpoint))
      const event = await webhooks.insertEvent({ type: TEST_EVENT, accountId: endpoint.accountId, data }, [endpoint.id], clock.now())
      wake()
      return reply.code(202).send(renderEvent(event))
    },
  )

  v1.get(
    '/webhook-endpoints/:endpointId/deliveries',
    {
      schema: {
        operationId: 'listWebhookDeliveries',
        tags: ['webhooks'],
        summary: 'List delivery attempts',
        description: 'The endpoint\'s last 100 attempts, newest first: the event, the receiver\'s status or why there was none, how long it took, when.',
        params: EndpointParams,
        response: { 200: response('The attempts.', Type.Array(ref(DeliveryAttempt))), 400: BAD_ID, 401: UNAUTHORIZED, 404: NO_ENDPOINT, 429: TOO_MANY_REQUESTS },
      },
    },
    async (request) => {
      const endpoint = await ownEndpoint(request.apiKey!.accountId, request.params.endpointId)
      return (await webhooks.attempts(endpoint.id, 100)).map((attempt) => ({
        eventId: `evt_${attempt.eventId}`,
        trigger: attempt.trigger,
        at: new Date(attempt.at).toISOString(),
        durationMs: attempt.durationMs,
        responseStatus: attempt.responseStatus,
        error: attempt.error,
      }))
    },
  )

  refuseOtherMethods(app, '/events', ['GET'])
  refuseOtherMethods(app, '/events/:eventId/redeliver', ['POST'])
  refuseOtherMethods(app, '/webhook-endpoints', ['GET', 'POST'])
  refuseOtherMethods(app, '/webhook-endpoints/:endpointId', ['GET', 'PATCH', 'DELETE'])
  refuseOtherMethods(app, '/webhook-endpoints/:endpointId/rotate-secret', ['POST'])
  refuseOtherMethods(app, '/webhook-endpoints/:endpointId/test', ['POST'])
  refuseOtherMethods(app, '/webhook-endpoints/:endpointId/deliveries', ['GET'])
}
