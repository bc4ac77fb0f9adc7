// Events and webhook endpoints over HTTP: a schema and a thin handler per operation
// over the webhook service (webhooks/webhook-admin.ts), which decides. What the service
// answers as missing (another account's endpoint or event included) is a 404 here.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { ApiError } from '../../errors.js'
import type { Idempotency } from '../../idempotency/idempotency.js'
import { fingerprintOf } from '../../idempotency/idempotency-key.js'
import { EVENT_TYPES, LISTED_EVENT_TYPES, readScopeOf, TEST_EVENT } from '../../vocabulary/event-types.js'
import { insufficientScope } from '../../plugins/v1-guard.js'
import { SCOPES } from '../../vocabulary/scopes.js'
import type { ApiKeyRecord } from '../../api-keys/api-key-record.js'
import { ATTEMPTS_SHOWN, DEFAULT_SECRET_GRACE_S, EndpointChangedMeanwhile, EndpointDisabled, EndpointLimitReached, MAX_SECRET_GRACE_S, WebhookAdminError, type WebhookAdmin } from '../../webhooks/webhook-admin.js'
import { DeliveryAttempt, EventSchema, NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch } from '../../schemas/webhook.js'
import { idSchema } from '../../schemas/pet.js'
import { BODY_TOO_LARGE, errorResponse, header, idempotencyKeyReused, notJsonBody, optionalHeader, response, TOO_MANY_REQUESTS, UNAUTHORIZED } from '../../schemas/responses.js'
import { parametersWithDefaults, ref } from '../../schemas/shared.js'
import { refuseOtherMethods } from '../method-not-allowed.js'
import { decodeCursor, encodeCursor } from './cursor.js'
import { DEFAULT_LIMIT, idempotencyKeyHeaders, MAX_LIMIT, optionalBody } from './parameters.js'

export interface WebhookRoutesOptions {
  webhookAdmin: WebhookAdmin
  /** Idempotency-Key on create: the answer is kept in the insert's own transaction, its secret sealed. */
  idempotency: Idempotency
}

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
  { grace: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_SECRET_GRACE_S, default: DEFAULT_SECRET_GRACE_S, description: 'Seconds the old secret keeps signing beside the new one: default 24 hours, at most 7 days.' })) },
  { additionalProperties: false },
)

const NO_ENDPOINT = errorResponse('There is no endpoint with this id of this account.', ['not_found'])
const BAD_ID = errorResponse('endpointId is not a positive integer.', ['invalid_parameter'])
const BAD_ENDPOINT = errorResponse('The body is not a JSON object of the documented fields, or the URL is refused (not https, or not a public address).', ['invalid_body', 'invalid_field'])

/** Whether `key` may read what an event of `type` carries (a pet, a category, an order, an endpoint). */
const mayRead = (key: ApiKeyRecord, type: string) => key.scopes.includes(readScopeOf(type))

/** The event types whose data `key` may read: those GET /v1/events shows it, and it may redeliver. */
const readableBy = (key: ApiKeyRecord) => LISTED_EVENT_TYPES.filter((type) => mayRead(key, type))

/**
 * An endpoint is subscribed only to the events whose data its key may read (`*`: to every
 * type's); else 403 naming every scope missing, and `action` ("to subscribe an endpoint to").
 */
function subscribableBy(key: ApiKeyRecord, enabledEvents: readonly string[] | undefined, action = 'to subscribe an endpoint to') {
  if (enabledEvents === undefined) return
  const every = enabledEvents.includes('*')
  const unreadable = (every ? EVENT_TYPES : enabledEvents).filter((type) => !mayRead(key, type))
  if (unreadable.length === 0) return
  const missing = SCOPES.filter((scope) => unreadable.some((type) => readScopeOf(type) === scope))
  throw insufficientScope(key, missing, `${action} ${every ? 'every event type (*)' : `${unreadable.join(', ')} events`}`)
}

/**
 * A key changes, rotates the secret of, or deletes an endpoint only if it may read every
 * type the endpoint takes, as a key manages only keys with no scope beyond its own:
 * another key of the account may have subscribed it to events this one may not read,
 * and pointed elsewhere, re-subscribed first, or holding its secret (which signs what the
 * receiver trusts, whatever the type), this key would get or forge them.
 */
function actsOn(key: ApiKeyRecord, endpoint: WebhookEndpoint) {
  subscribableBy(key, endpoint.enabledEvents, 'to change, rotate the secret of, or delete an endpoint subscribed to')
}

export async function webhookRoutes(app: FastifyInstance, { webhookAdmin, idempotency }: WebhookRoutesOptions) {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>()
  const noEndpoint = (id: number) => new ApiError('not_found', `There is no webhook endpoint with id ${id} of this account.`)
  const found = <T>(id: number, answer: T | undefined): T => {
    if (answer === undefined) throw noEndpoint(id)
    return answer
  }
  const refused = (error: unknown): never => {
    if (error instanceof WebhookAdminError) throw new ApiError('invalid_field', `${error.message}.`, { details: [{ field: error.field, message: error.message }] })
    if (error instanceof EndpointLimitReached) throw new ApiError('endpoint_limit_reached', error.message)
    if (error instanceof EndpointDisabled) throw new ApiError('endpoint_disabled', error.message)
    if (error instanceof EndpointChangedMeanwhile) throw new ApiError('service_unavailable', error.message, { headers: { 'retry-after': '1' } })
    throw error
  }

  v1.get(
    '/events',
    {
      schema: {
        operationId: 'listEvents',
        tags: ['webhooks'],
        summary: 'List events',
        description:
          'The caller\'s events (its orders\', its endpoints\') and every pet and category event, newest first, for 30 days: the way to catch up after a receiver was down. `Link: rel="next"` leads to older ones. A key is shown the events whose data it may read: pet events with `pets:read`, category events with `categories:read`, order events with `orders:read`, endpoint events with `webhooks:read` (asking for a `type` it may not read is 403 `insufficient_scope`).',
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
      // Each event carries a pet, a category, an order or an endpoint: a key is shown those it may read.
      const key = request.apiKey!
      if (type !== undefined && !mayRead(key, type)) throw insufficientScope(key, readScopeOf(type), `to read ${type} events`)
      const types = type === undefined ? readableBy(key) : [type]
      const page = await webhookAdmin.events(key.accountId, { types, beforeId: cursor === undefined ? undefined : decodeCursor(cursor), limit })
      if (page.nextBeforeId !== undefined) {
        reply.header('link', `</v1/events?limit=${limit}${type ? `&type=${type}` : ''}&cursor=${encodeCursor(page.nextBeforeId)}>; rel="next"`)
      }
      return page.events
    },
  )

  v1.post(
    '/events/:eventId/redeliver',
    {
      schema: {
        operationId: 'redeliverEvent',
        tags: ['webhooks'],
        summary: 'Send an event again',
        description: 'Queues the event again for each of the caller\'s enabled endpoints subscribed to its type (a test event: for the endpoint it was made for alone, whatever it subscribes to); they get it within a second, with the same `webhook-id`. The key must be able to read the event\'s data, as `GET /v1/events` shows it (an order event needs `orders:read`): else 404, as for an event that does not exist.',
        params: EventParams,
        response: {
          202: response(
            'Queued.',
            Type.Object(
              {
                deliveries: Type.Integer({ minimum: 0, description: 'How many endpoints it was queued for.' }),
                reason: Type.Optional(Type.String({ description: 'When `deliveries` is 0: why (no endpoint, none enabled, none subscribed to the type, a test event whose endpoint is disabled or deleted).' })),
              },
              { additionalProperties: false },
            ),
          ),
          400: errorResponse('eventId is malformed.', ['invalid_parameter']),
          401: UNAUTHORIZED,
          404: errorResponse('There is no such event this account may see, or its data is of a kind the key may not read.', ['not_found']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      // Only the events the key may read (as GET /v1/events shows them): its endpoints would hand it the rest.
      const key = request.apiKey!
      const queued = await webhookAdmin.redeliver(key.accountId, request.params.eventId, readableBy(key))
      if (queued === undefined) throw new ApiError('not_found', `There is no event ${request.params.eventId} for this account.`)
      return reply.code(202).send(queued)
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
          'Starts sending the listed events to `url`, signed with a new secret (in this response alone). The URL must be https (http outside production) and resolve to public addresses only. The calling key subscribes it only to events whose data it may read (pet events need `pets:read`, category events `categories:read`, order events `orders:read`, endpoint events `webhooks:read`; `*` all four): else 403 `insufficient_scope`. An account has at most 16 endpoints (the operator sets the number: `PETSTORE_WEBHOOK_MAX_ENDPOINTS`); one more is refused with 409 `endpoint_limit_reached`. Send an `Idempotency-Key` to make retries safe: a retry of a create whose answer was lost then gets the same 201, secret included (kept for those 24 hours with the key\'s record, sealed with the main key, never in the clear), instead of a second endpoint.',
        headers: idempotencyKeyHeaders({ replays: 'the first 201 (the secret included)', doesNot: 'makes no second endpoint' }),
        body: ref(NewWebhookEndpoint),
        response: {
          201: response('The endpoint, with its secret.', ref(WebhookEndpoint), { Location: header('`/v1/webhook-endpoints/{id}`.') }),
          400: errorResponse(
            'The body is not a JSON object of the documented fields, or the URL is refused (not https, or not a public address); or the Idempotency-Key header is malformed.',
            ['invalid_body', 'invalid_field', 'invalid_parameter'],
          ),
          401: UNAUTHORIZED,
          409: errorResponse(
            'The account has as many endpoints as it may (16 unless the operator set another number; the message says how many): `endpoint_limit_reached`; or a request with this Idempotency-Key is still running: `idempotency_key_in_use`, retry after `Retry-After` seconds.',
            ['endpoint_limit_reached', 'idempotency_key_in_use'],
            { 'Retry-After': optionalHeader('With `idempotency_key_in_use` only: seconds to wait before retrying.', Type.Integer()) },
          ),
          413: BODY_TOO_LARGE,
          415: notJsonBody(),
          422: idempotencyKeyReused('; use a new key for a new endpoint'),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const { url, enabledEvents, description = '' } = request.body
      subscribableBy(request.apiKey!, enabledEvents)
      const answer = await idempotency
        .run(request, {
          // The calling key is part of the request: a replay hands out the signing secret (routes/v1/keys.ts says why).
          fingerprint: () => fingerprintOf('createWebhookEndpoint', { url, enabledEvents: [...new Set(enabledEvents)].sort(), description, by: request.apiKey!.id }),
          write: (completion) => webhookAdmin.create(request.apiKey!.accountId, request.body, completion),
        })
        .catch(refused)
      if (answer.replayed) {
        // Its secret goes to the caller as the endpoint stands now: subscribed since to what the caller may not read, it is refused.
        const now = await webhookAdmin.get(request.apiKey!.accountId, (answer.body as WebhookEndpoint).id)
        if (now) actsOn(request.apiKey!, now)
        reply.header('idempotent-replayed', 'true')
      }
      // A replay's secret was kept sealed beside the body (every endpoint create's record has one).
      const endpoint = answer.replayed ? { ...(answer.body as WebhookEndpoint), secret: answer.secret } : answer.result
      return reply.code(201).header('location', `/v1/webhook-endpoints/${endpoint.id}`).send(endpoint)
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
    async (request) => webhookAdmin.list(request.apiKey!.accountId),
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
    async (request) => found(request.params.endpointId, await webhookAdmin.get(request.apiKey!.accountId, request.params.endpointId)),
  )

  v1.patch(
    '/webhook-endpoints/:endpointId',
    {
      schema: {
        operationId: 'updateWebhookEndpoint',
        tags: ['webhooks'],
        summary: 'Change a webhook endpoint',
        description: 'Changes the fields given (a JSON Merge Patch, RFC 7396, sent as `application/merge-patch+json` or `application/json`): url (checked as on creation), enabledEvents (each one the calling key may read, as on creation), description, and `enabled`. A key changes (or deletes, or rotates the secret of) only an endpoint whose every type it may read (another key may have subscribed it to more), else 403 `insufficient_scope`; a change meanwhile to its subscription is judged again, and one that keeps changing is answered 503.',
        consumes: ['application/merge-patch+json', 'application/json'],
        params: EndpointParams,
        body: ref(WebhookEndpointPatch),
        response: {
          200: response('The endpoint as changed.', ref(WebhookEndpoint)),
          400: BAD_ENDPOINT,
          401: UNAUTHORIZED,
          404: NO_ENDPOINT,
          413: BODY_TOO_LARGE,
          415: notJsonBody(true),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request) => {
      const key = request.apiKey!
      subscribableBy(key, request.body.enabledEvents)
      return found(request.params.endpointId, await webhookAdmin.update(key.accountId, request.params.endpointId, request.body, (current) => actsOn(key, current)).catch(refused))
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
      const key = request.apiKey!
      if (!(await webhookAdmin.delete(key.accountId, request.params.endpointId, (current) => actsOn(key, current)))) throw noEndpoint(request.params.endpointId)
      return reply.code(204).send(null)
    },
  )

  v1.post(
    '/webhook-endpoints/:endpointId/rotate-secret',
    {
      ...optionalBody,
      schema: {
        operationId: 'rotateWebhookSecret',
        tags: ['webhooks'],
        summary: 'Rotate the signing secret',
        description:
          'A new secret (in this response alone) signs every delivery from now on; the old one also signs them, as a second signature in `webhook-signature`, for the grace period, so receivers can switch without losing a delivery. One old secret is kept: rotating again within a grace period ends it at once, and the secret before the last stops signing. The secret lets its holder sign what the receiver trusts, whatever the type: the key must be able to read every type the endpoint takes, else 403 `insufficient_scope`.',
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
      const key = request.apiKey!
      return found(request.params.endpointId, await webhookAdmin.rotateSecret(key.accountId, request.params.endpointId, request.body.grace, (current) => actsOn(key, current)).catch(refused))
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
          409: errorResponse('The endpoint is disabled: it is sent nothing until it is enabled.', ['endpoint_disabled']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const event = found(request.params.endpointId, await webhookAdmin.test(request.apiKey!.accountId, request.params.endpointId).catch(refused))
      return reply.code(202).send(event)
    },
  )

  v1.get(
    '/webhook-endpoints/:endpointId/deliveries',
    {
      schema: {
        operationId: 'listWebhookDeliveries',
        tags: ['webhooks'],
        summary: 'List delivery attempts',
        description: `The endpoint's last ${ATTEMPTS_SHOWN} attempts, newest first: the event, the receiver's status or why there was none, how long it took, when.`,
        params: EndpointParams,
        response: { 200: response('The attempts.', Type.Array(ref(DeliveryAttempt))), 400: BAD_ID, 401: UNAUTHORIZED, 404: NO_ENDPOINT, 429: TOO_MANY_REQUESTS },
      },
    },
    async (request) => found(request.params.endpointId, await webhookAdmin.deliveries(request.apiKey!.accountId, request.params.endpointId)),
  )

  refuseOtherMethods(app, '/events', ['GET'])
  refuseOtherMethods(app, '/events/:eventId/redeliver', ['POST'])
  refuseOtherMethods(app, '/webhook-endpoints', ['GET', 'POST'])
  refuseOtherMethods(app, '/webhook-endpoints/:endpointId', ['GET', 'PATCH', 'DELETE'])
  refuseOtherMethods(app, '/webhook-endpoints/:endpointId/rotate-secret', ['POST'])
  refuseOtherMethods(app, '/webhook-endpoints/:endpointId/test', ['POST'])
  refuseOtherMethods(app, '/webhook-endpoints/:endpointId/deliveries', ['GET'])
}
