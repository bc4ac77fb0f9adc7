// Events, webhook endpoints and their deliveries, as stored. Events are written by
// triggers in the transaction of the change they report (migration 2026-11-24-007);
// dispatchers fan them out into deliveries, claim those, and record what they did.
// Written once for both databases (sql/webhooks.ts); the dialects differ only in
// PostgreSQL's SKIP LOCKED.

export interface StoredEvent {
  id: number
  type: string
  /** The key an order event concerns; null for pet events. */
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
  secret: string
  /** The secret before the last rotation, still signing until `previousSecretUntil`. */
  previousSecret: string | null
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
  secret: string
}

export interface EndpointChanges {
  url?: string
  description?: string
  enabledEvents?: string
  /** Null enables it again (and forgets its failures). */
  disabledAt?: number | null
}

/** A delivery a dispatcher holds until `leaseUntil`: the event and where it goes. */
export interface ClaimedDelivery {
  id: number
  attempts: number
  /** `manual`: a test event or a redelivery. */
  trigger: 'scheduled' | 'manual'
  leaseUntil: number
  event: StoredEvent
  endpoint: StoredEndpoint
}

export interface AttemptRecord {
  deliveryId: number
  /** The lease it was claimed with: an attempt whose lease was taken over is not recorded. */
  leaseUntil: number
  trigger: 'scheduled' | 'manual'
  at: number
  durationMs: number
  responseStatus: number | null
  error: string | null
  /** What becomes of the delivery: delivered, failed for good, or another attempt at `nextAttemptAt`. */
  outcome: { status: 'delivered' } | { status: 'failed' } | { status: 'pending'; nextAttemptAt: number }
  /**
   * Disable the endpoint at `at` (it answered 410, or failed for 5 days), and, in the same
   * transaction, write a `webhook_endpoint.disabled` event saying why, for the key's
   * other endpoints: once, however many attempts or dispatchers find it so.
   */
  disableBecause?: string
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
}

export interface EventQuery {
  accountId: number
  type?: string | undefined
  /** Newest first: events with ids below this one. */
  beforeId?: number | undefined
  limit: number
}

export interface WebhooksStore {
  /** The key's events and every pet event, newest first. */
  events(query: EventQuery): Promise<StoredEvent[]>
  event(id: number): Promise<StoredEvent | undefined>
  insertEndpoint(endpoint: NewStoredEndpoint, now: number): Promise<StoredEndpoint>
  /** The key's endpoints, by id. */
  endpoints(accountId: number): Promise<StoredEndpoint[]>
  /** The endpoint, when it is this key's. */
  endpoint(accountId: number, id: number): Promise<StoredEndpoint | undefined>
  updateEndpoint(accountId: number, id: number, changes: EndpointChanges): Promise<StoredEndpoint | undefined>
  /** Makes `secret` the signing secret; the current one keeps signing until `previousUntil`. */
  rotateSecret(accountId: number, id: number, secret: string, previousUntil: number): Promise<StoredEndpoint | undefined>
  /** Deletes the endpoint and its pending deliveries. */
  deleteEndpoint(accountId: number, id: number): Promise<boolean>
  /**
   * Makes the deliveries of up to `limit` events still to fan out (one per enabled
   * endpoint that takes the event, due at `now`) and clears their mark, in one
   * transaction; answers how many events it took. Concurrent callers take different events.
   */
  fanOut(now: number, limit: number): Promise<number>
  /** Takes up to `limit` due deliveries (pending, next attempt due, no live lease) for `leaseMs`: no other dispatcher gets them meanwhile. */
  claimDue(now: number, leaseMs: number, limit: number): Promise<ClaimedDelivery[]>
  /** Adds a manual delivery of `eventId` to `endpointId`, due now (a redelivery). */
  enqueue(endpointId: number, eventId: number, now: number): Promise<number>
  /**
   * Records attempts and their outcomes in one transaction, in order; for each, false
   * when its lease was lost (another dispatcher took the delivery over) and nothing of it was written.
   */
  recordAttempts(attempts: readonly AttemptRecord[]): Promise<boolean[]>
  /** Gives a claimed delivery back, due now (a dispatcher stopping). */
  release(deliveryId: number, leaseUntil: number): Promise<void>
  /** The endpoint's attempts, newest first. */
  attempts(endpointId: number, limit: number): Promise<StoredAttempt[]>
  /** Inserts an event with no trigger behind it (webhook_endpoint.disabled, a test event) and manual deliveries of it to `endpointIds`. */
  insertEvent(event: { type: string; accountId: number | null; data: string }, endpointIds: readonly number[], now: number): Promise<StoredEvent>
  /**
   * Calls `listener` when any process wrote an event to fan out (PostgreSQL: LISTEN on
   * the triggers' NOTIFY); resolves with a function that stops. SQLite has no such
   * signal: its dispatchers poll alone.
   */
  watch(listener: () => void, onError: (error: unknown) => void): Promise<() => Promise<void>>
  /** Deletes events older than `before`, with their finished deliveries and attempts. */
  purge(before: number): Promise<void>
}
