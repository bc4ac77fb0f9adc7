// Events as the API and webhooks present them: `{id, type, timestamp, data}`, where
// `data` is the resource as the API returns it, rendered from the row the trigger
// stored (migration 2026-11-24-007).
import type { StoredEvent } from '../db/webhook-endpoints-store.js'


export interface Event {
  id: string
  type: string
  timestamp: string
  data: Record<string, unknown>
}

const iso = (ms: number) => new Date(ms).toISOString()

export const eventId = (id: number) => `evt_${id}`

/** The store's id of `evt_123`, or undefined. */
export function parseEventId(text: string): number | undefined {
  const match = /^evt_([1-9][0-9]{0,15})$/.exec(text)
  const id = match ? Number(match[1]) : NaN
  return Number.isSafeInteger(id) ? id : undefined
}

/** The row a trigger stored, as the API's resource. */
function resource(type: string, row: Record<string, unknown>): Record<string, unknown> {
  if (type.startsWith('pet.')) return { id: row.id, name: row.name, categoryId: row.category_id, status: row.status }
  if (type.startsWith('category.')) return { id: row.id, name: row.name, description: row.description }
  if (type.startsWith('order.')) {
    const order: Record<string, unknown> = { id: row.id, petId: row.pet_id, status: row.status, placedAt: iso(Number(row.placed_at)) }
    if (row.closed_at !== null && row.closed_at !== undefined) order.closedAt = iso(Number(row.closed_at))
    return order
  }
  // Written by the service itself, already as the API's resource.
  return row
}

export function renderEvent(stored: StoredEvent): Event {
  return { id: eventId(stored.id), type: stored.type, timestamp: iso(stored.createdAt), data: resource(stored.type, JSON.parse(stored.data) as Record<string, unknown>) }
}
