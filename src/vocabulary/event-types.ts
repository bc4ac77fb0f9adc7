// The event types, named once for every layer: the schemas (what an endpoint may
// subscribe to), the webhook service and the dispatcher.
import type { Scope } from './scopes.js'

/** What an endpoint can subscribe to. */
export const EVENT_TYPES = ['pet.created', 'pet.updated', 'pet.deleted', 'category.created', 'category.updated', 'category.deleted', 'order.placed', 'order.completed', 'order.cancelled', 'webhook_endpoint.disabled'] as const
export type EventType = (typeof EVENT_TYPES)[number]

/** Sent to one endpoint when asked (POST …/test), never by subscription. */
export const TEST_EVENT = 'webhook_endpoint.test'

/** Every type an event may have: what GET /v1/events lists. */
export const LISTED_EVENT_TYPES: readonly string[] = [...EVENT_TYPES, TEST_EVENT]

/**
 * The scope that reads what an event of `type` carries (a pet, a category, an order, an
 * endpoint): a key without it is shown none of those events (GET /v1/events), and
 * subscribes no endpoint to them.
 */
export function readScopeOf(type: string): Scope {
  if (type.startsWith('pet.')) return 'pets:read'
  if (type.startsWith('category.')) return 'categories:read'
  if (type.startsWith('order.')) return 'orders:read'
  return 'webhooks:read'
}
