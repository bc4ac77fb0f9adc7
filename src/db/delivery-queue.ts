// The queue of webhook deliveries the dispatchers work (webhooks/dispatcher.ts): fan
// events out into deliveries, claim the due ones, record what was done. The API's side,
// the endpoints, is webhook-endpoints-store.ts. Written once for both databases
// (sql/delivery-queue.ts); the dialects differ only in PostgreSQL's SKIP LOCKED.
import type { StoredEndpoint, StoredEvent, StoredSecrets } from './webhook-endpoints-store.js'

/** A delivery a dispatcher holds until `leaseUntil`: the event and where it goes. */
export interface ClaimedDelivery {
  id: number
  attempts: number
  /** `manual`: a test event or a redelivery. */
  trigger: 'scheduled' | 'manual'
  leaseUntil: number
  /** When the delivery was queued (the fan-out, a test event, a redelivery). */
  queuedAt: number
  event: StoredEvent
  endpoint: StoredEndpoint
  /** Its signing secrets, sealed: the dispatcher opens them to sign. */
  secrets: StoredSecrets
  /**
   * Why the subscription rule (sql/webhook-rows.ts `takes`) no longer lets it go, asked
   * again at the claim: the endpoint or its account disabled, or (a scheduled delivery)
   * the event's type unsubscribed since the fan-out. Undefined: send it.
   */
  refusal?: string
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

/** The queue as an operator watches it (GET /metrics). */
export interface Backlog {
  /** Pending deliveries due now: the dispatchers' backlog. */
  due: number
  /** Pending deliveries waiting for a later attempt (a retry). */
  retrying: number
  /**
   * When the oldest work not yet attempted was made: an event still to fan out, or a
   * delivery never attempted (its event's time; a manual one's own). Null when none.
   */
  oldestSince: number | null
}

/**
 * Claiming ahead: room for `extra` more deliveries of each of `endpoints` than
 * `perEndpoint`, as long as every delivery of that endpoint under a live lease is one of
 * `held` (the claiming dispatcher's own). The dispatcher holds those back and sends one
 * as each of its requests to the endpoint ends: no more than `perEndpoint` are ever under
 * way, and the next starts without waiting for a claim.
 */
export interface ClaimAhead {
  extra: number
  endpoints: readonly number[]
  held: readonly number[]
}

export interface DeliveryQueue {
  /**
   * Deliveries a dispatcher claims ahead for an endpoint that answers quickly (see
   * ClaimAhead): enough for the endpoint's requests to follow each other through a
   * record-and-claim on this backend. PostgreSQL's is a round trip to another process,
   * which needs 256 to keep one endpoint's 8 requests busy; SQLite's is in-process, and 64
   * do (256 there only made each claim's list of held deliveries longer: 0.92 of the rate).
   */
  readonly claimAhead: number
  /**
   * Makes the deliveries of up to `limit` events still to fan out (one per enabled
   * endpoint that takes the event, due at `now`) and clears their mark, in one
   * transaction; answers how many events it took, and when the youngest of them was
   * written (how far behind the fan-out is, when it took `limit`). Concurrent callers
   * take different events.
   */
  fanOut(now: number, limit: number): Promise<{ events: number; newestAt: number | undefined }>
  /**
   * Takes up to `limit` due deliveries (pending, next attempt due, no live lease), oldest
   * due first, for `leaseMs`: no other dispatcher gets them meanwhile. With
   * `perEndpoint`, none that would put more than that many of one endpoint's deliveries
   * under a live lease: an endpoint slow to answer does not fill the claims. With
   * `ahead`, more for the endpoints it names whose every live lease the caller holds.
   */
  claimDue(now: number, leaseMs: number, limit: number, perEndpoint?: number, ahead?: ClaimAhead): Promise<ClaimedDelivery[]>
  /**
   * Records attempts and their outcomes in one transaction, in order; for each, false
   * when its lease was lost (another dispatcher took the delivery over) and nothing of it was written.
   */
  recordAttempts(attempts: readonly AttemptRecord[]): Promise<boolean[]>
  /**
   * `recordAttempts`, then `claimDue` as `claim` says, in one transaction (PostgreSQL: one
   * statement): the leases the record gives back are room for the claim without a
   * second round trip.
   */
  recordAndClaim(
    attempts: readonly AttemptRecord[],
    claim: { now: number; leaseMs: number; limit: number; perEndpoint?: number; ahead?: ClaimAhead },
  ): Promise<{ recorded: boolean[]; claimed: ClaimedDelivery[] }>
  /**
   * Where claimed deliveries would go now, and whether they still may (as at a claim): for
   * each one still pending, its endpoint and secrets as they are, and the rule's refusal.
   * One absent is gone (its endpoint deleted). A dispatcher reads this again before it
   * sends a delivery it has held back a while: the endpoint may have been disabled,
   * deleted or pointed elsewhere since the claim.
   */
  targets(deliveryIds: readonly number[]): Promise<Map<number, Pick<ClaimedDelivery, 'endpoint' | 'secrets' | 'refusal'>>>
  /** Gives a claimed delivery back, due now (a dispatcher stopping). */
  release(deliveryId: number, leaseUntil: number): Promise<void>
  /**
   * Calls `listener` when any process wrote an event to fan out (PostgreSQL: LISTEN on
   * the triggers' NOTIFY); resolves with a function that stops. SQLite has no such
   * signal: its dispatchers poll alone.
   */
  watch(listener: () => void, onError: (error: unknown) => void): Promise<() => Promise<void>>
  /** How much is waiting, and since when (read when /metrics is scraped). */
  backlog(now: number): Promise<Backlog>
  /** Deletes the events older than `before` of which no delivery is pending, with their deliveries and attempts: a batch a transaction, the event loop free between. */
  purge(before: number): Promise<void>
}
