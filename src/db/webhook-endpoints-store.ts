// Webhook endpoints as the API manages them, and the events and attempts an account
// reads: the door of the webhook service (webhooks/webhook-admin.ts). The dispatchers'
// side, the queue of deliveries, is delivery-queue.ts. Events are written by triggers
// in the transaction of the change they report (migration 2026-11-24-007). Written
// once for both databases (sql/webhook-endpoints.ts).
import type { CompletionOf } from './idempotency-store.js'

export interface StoredEvent {
  id: number
  type: string
  /** The account an order or endpoint event concerns; null for pet events, which every account sees. */
  accountId: number | null
  /** The row as written (column names, times in ms), JSON. */
  data: string
  createdAt: number
}

export interface StoredEndpoint {
  id: number
  accountId: number
  url: string
  description: string
  /** Event types, space-separated, or `*`. */
  enabledEvents: string
  /** Until when the secret before the last rotation still signs. */
  previousSecretUntil: number | null
  disabledAt: number | null
  /** Since when every attempt has failed; null after a success. */
  failingSince: number | null
  createdAt: number
}

export interface NewStoredEndpoint {
  accountId: number
  url: string
  description: string
  enabledEvents: string
  /** Sealed (secrets/secret-box.ts): the store never holds a secret in the clear. */
  secret: string
}

/** An endpoint's signing secrets as stored (sealed): read by the dispatchers and the reseal command, never by the API. */
export interface StoredSecrets {
  secret: string
  /** The secret before the last rotation, still signing until the endpoint's `previousSecretUntil`. */
  previousSecret: string | null
}

export interface EndpointChanges {
  url?: string
  description?: string
  enabledEvents?: string
  /** Null enables it again (and forgets its failures). */
  disabledAt?: number | null
}

export interface StoredAttempt {
  id: number
  deliveryId: number
  eventId: number
  trigger: 'scheduled' | 'manual'
  at: number
  durationMs: number
  responseStatus: number | null
  error: string | null
  /** When its delivery is tried again, if it is still pending. */
  deliveryNextAttemptAt: number | null
}

export interface EventQuery {
  accountId: number
  /** The types listed (one asked for, or those the caller may read); every type by default. */
  types?: readonly string[] | undefined
  /** Newest first: events with ids below this one. */
  beforeId?: number | undefined
  limit: number
}

export interface WebhookEndpointsStore {
  /** The account's events and every pet event, newest first. */
  events(query: EventQuery): Promise<StoredEvent[]>
  /**
   * The new endpoint; undefined, and nothing written, when its account has `limit` endpoints already (counted under a lock: concurrent inserts cannot pass it).
   * With `completion`, the claim is completed in the same transaction, the 201 body made from the stored endpoint (ClaimLostError if it was taken over: nothing inserted).
   */
  insertEndpoint(endpoint: NewStoredEndpoint, now: number, limit?: number, completion?: CompletionOf<StoredEndpoint>): Promise<StoredEndpoint | undefined>
  /** The account's endpoints, by id. */
  endpoints(accountId: number): Promise<StoredEndpoint[]>
  /** The endpoint, when it is this account's. */
  endpoint(accountId: number, id: number): Promise<StoredEndpoint | undefined>
  /** Undefined when the account has no such endpoint, or (`onlyIf`) its enabled events are no longer those. */
  updateEndpoint(accountId: number, id: number, changes: EndpointChanges, onlyIf?: { enabledEvents: string }): Promise<StoredEndpoint | undefined>
  /** Makes `secret` (sealed) the signing secret; the current one keeps signing until `previousUntil`. Undefined as updateEndpoint's. */
  rotateSecret(accountId: number, id: number, secret: string, previousUntil: number, onlyIf?: { enabledEvents: string }): Promise<StoredEndpoint | undefined>
  /** Every endpoint's sealed secrets, by id, after `afterId` (the reseal command). */
  secrets(afterId: number, limit: number): Promise<(StoredSecrets & { id: number })[]>
  /** Replaces an endpoint's sealed secrets, if they are still `from` (a rotation meanwhile wins); whether it did. */
  replaceSecrets(id: number, from: StoredSecrets, to: StoredSecrets): Promise<boolean>
  /** Deletes the endpoint, its deliveries and their attempts. */
  deleteEndpoint(accountId: number, id: number): Promise<boolean>
  /**
   * Queues a manual delivery of the event, due now, to each of the account's endpoints
   * that takes it (the fan-out's own rule); answers how many, and the event's type, or
   * undefined when the account may not see the event or it is not of one of `types` (those the caller may read).
   */
  redeliver(accountId: number, eventId: number, types: readonly string[], now: number): Promise<{ deliveries: number; type: string } | undefined>
  /** Inserts a test event of the endpoint's account and a manual delivery of it to the endpoint alone. */
  insertTestEvent(endpoint: StoredEndpoint, type: string, data: string, now: number): Promise<StoredEvent>
  /** The endpoint's attempts, newest first. */
  attempts(endpointId: number, limit: number): Promise<StoredAttempt[]>
}
