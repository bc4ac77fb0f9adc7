// Events and webhook endpoints: one schema per shape, for validation, serialization,
// the OpenAPI document and the handlers' types.
import { Type, type Static } from 'typebox'
import { EVENT_TYPES, TEST_EVENT } from '../vocabulary/event-types.js'
import { idSchema } from './pet.js'
import { STORABLE_TEXT, STORABLE_TEXT_NOTE } from './text.js'

const id = (description: string) => idSchema(description, { examples: [1] })
const timestamp = (description: string) => Type.String({ format: 'date-time', description: `${description} ISO 8601, UTC, with milliseconds.` })
const EventType = Type.Unsafe<string>({ type: 'string', enum: [...EVENT_TYPES, TEST_EVENT], description: 'An event type.' })

export const EventSchema = Type.Object(
  {
    id: Type.String({ pattern: '^evt_[0-9]+$', description: 'The event id: `webhook-id` on every delivery of it, the same on every retry.', examples: ['evt_1'] }),
    type: EventType,
    timestamp: timestamp('When the change happened.'),
    data: Type.Object({}, { additionalProperties: true, description: 'The resource as the API returns it after the change (a Pet, an Order; for webhook_endpoint.* the endpoint).' }),
  },
  { $id: 'Event', additionalProperties: false, description: 'Something that happened: the body of every webhook delivery.' },
)

const EnabledEvents = Type.Array(Type.Unsafe<string>({ type: 'string', enum: ['*', ...EVENT_TYPES] }), {
  minItems: 1,
  maxItems: EVENT_TYPES.length + 1,
  uniqueItems: true,
  examples: [['order.placed', 'order.completed']],
  description: `The event types to send, or \`["*"]\` for all: ${EVENT_TYPES.map((t) => `\`${t}\``).join(', ')}.`,
})
const Url = Type.String({ minLength: 1, maxLength: 2048, ...STORABLE_TEXT, description: 'Where to POST deliveries: https (http in development), a public address.', examples: ['https://93.184.215.14/petstore-webhooks'] })
const Description = Type.String({ maxLength: 500, ...STORABLE_TEXT, description: `A note for people: ${STORABLE_TEXT_NOTE}.` })

export const WebhookEndpoint = Type.Object(
  {
    id: id('Identifier of the endpoint.'),
    url: Url,
    description: Description,
    enabledEvents: EnabledEvents,
    status: Type.Unsafe<'enabled' | 'disabled'>({ type: 'string', enum: ['enabled', 'disabled'], description: '`disabled` by the caller, after a 410, or after 5 days of failures.' }),
    disabledAt: Type.Union([timestamp('When it was disabled.'), Type.Null()], { description: 'When it was disabled; null while enabled.' }),
    createdAt: timestamp('When it was made.'),
    secret: Type.Optional(Type.String({ description: 'The signing secret (`whsec_…`): in the response that made or rotated it (and that create\'s Idempotency-Key replays, to the same API key, for 24 hours), and never again.' })),
  },
  { $id: 'WebhookEndpoint', additionalProperties: false, description: 'Where an account\'s events are sent, signed (Standard Webhooks).' },
)
export type WebhookEndpoint = Static<typeof WebhookEndpoint>

export const NewWebhookEndpoint = Type.Object(
  { url: Url, enabledEvents: EnabledEvents, description: Type.Optional(Description) },
  { $id: 'NewWebhookEndpoint', additionalProperties: false, description: 'An endpoint to make.' },
)
export type NewWebhookEndpoint = Static<typeof NewWebhookEndpoint>

export const WebhookEndpointPatch = Type.Object(
  {
    url: Type.Optional(Url),
    enabledEvents: Type.Optional(EnabledEvents),
    description: Type.Optional(Description),
    enabled: Type.Optional(Type.Boolean({ description: 'false stops deliveries; true starts them again (and forgets past failures).' })),
  },
  { $id: 'WebhookEndpointPatch', additionalProperties: false, minProperties: 1, description: 'The fields to change.' },
)
export type WebhookEndpointPatch = Static<typeof WebhookEndpointPatch>

export const DeliveryAttempt = Type.Object(
  {
    eventId: Type.String({ description: 'The event delivered (`evt_…`).' }),
    trigger: Type.Unsafe<'scheduled' | 'manual'>({ type: 'string', enum: ['scheduled', 'manual'], description: '`scheduled`; `manual` for a test or a redelivery.' }),
    at: timestamp('When the attempt ended.'),
    durationMs: Type.Integer({ minimum: 0, description: 'How long it took.' }),
    responseStatus: Type.Union([Type.Integer(), Type.Null()], { description: 'The receiver\'s status; null when there was no answer.' }),
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why there was no answer (a timeout, a refused connection, a refused address), or why nothing was sent (`not sent: …`).' }),
    nextAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'On the latest attempt of a delivery that will be tried again: when (the retry schedule, or the receiver\'s `Retry-After` up to the next step of it). Null otherwise.',
    }),
  },
  { $id: 'DeliveryAttempt', additionalProperties: false, description: 'One attempt to deliver an event.' },
)
export type DeliveryAttempt = Static<typeof DeliveryAttempt>
/** An event as the API and webhooks present it (the Event schema). */
export type WebhookEvent = Static<typeof EventSchema>
