// The event types, named once for every layer: the schemas (what an endpoint may
// subscribe to), the webhook service and the dispatcher.

/** What an endpoint can subscribe to. */
export const EVENT_TYPES = ['pet.created', 'pet.updated', 'pet.deleted', 'category.created', 'category.updated', 'category.deleted', 'order.placed', 'order.completed', 'order.cancelled', 'webhook_endpoint.disabled'] as const
export type EventType = (typeof EVENT_TYPES)[number]

/** Sent to one endpoint when asked (POST …/test), never by subscription. */
export const TEST_EVENT = 'webhook_endpoint.test'
