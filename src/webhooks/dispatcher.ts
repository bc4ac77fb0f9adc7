// Delivers the outbox: every instance (and worker) runs one, or `petstore dispatch`
// runs them apart from the API's processes. It fans the new events out into
// deliveries (one per subscribed endpoint), then claims due deliveries for a lease (PostgreSQL: FOR UPDATE SKIP LOCKED, so N dispatchers take each once;
// SQLite: the single writer's UPDATE), sends each, and records the attempt under that
// lease. A dispatcher killed mid-delivery never records: its lease runs out and another
// takes the delivery again (at least once; receivers deduplicate by webhook-id). On
// close it stops claiming, lets the attempts under way finish, and gives back what it
// had claimed but not started. No request of the API ever waits for any of this.
import { performance } from 'node:perf_hooks'
import type { Clock } from '../clock.js'
import type { AttemptRecord, ClaimedDelivery, DeliveryQueue } from '../db/delivery-queue.js'
import { createAgents, DELIVERY_TIMEOUT_MS, send, type AttemptResult } from './deliver.js'
import { eventId, renderEvent } from './events.js'
import { guardedLookup, literalRefusal, type Cidr } from './outbound.js'
import { signatureHeader } from './signature.js'

/** After the first attempt fails, the next ones wait about this long (±10 %): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; then the delivery has failed. */
export const RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]
/** An endpoint failing this long without a success is disabled. */
export const DISABLE_AFTER_MS = 5 * 86_400_000
const BATCH = 20
/** Events fanned out per transaction. */
const FAN_OUT_BATCH = 500

export interface DispatcherOptions {
  deliveries: DeliveryQueue
  clock: Clock
  allowed: readonly Cidr[]
  /** How often to look for due deliveries. */
  pollMs?: number
  schedule?: readonly number[]
  random?: () => number
  /** Wake on the database's notifications of new events to fan out (PostgreSQL); false: poll only (tests that drive it step by step). */
  listen?: boolean
  /** How long an attempt may take, answer included (15 s). */
  timeoutMs?: number
  /** How long a claim holds (60 s): longer than an attempt may take, or a slow receiver is sent the event twice. */
  leaseMs?: number
  /** Keep the process alive while it runs (`petstore dispatch`, which has no server to); a server's dispatcher never holds its process open. */
  holdsProcess?: boolean
  /**
   * True while the API's requests keep this process busy (request-pressure.ts): the
   * dispatcher then gives way, one batch of each kind a poll and no wake-ups between
   * polls, and catches up when they slacken. Never, by default.
   */
  busy?: () => boolean
  onError?: (error: unknown, what: string) => void
}

export function startDispatcher({ deliveries, clock, allowed, pollMs = 1_000, schedule = RETRY_SCHEDULE_MS, random = Math.random, listen = true, timeoutMs = DELIVERY_TIMEOUT_MS, leaseMs = 60_000, holdsProcess = false, busy = () => false, onError = () => {} }: DispatcherOptions) {
  const agents = createAgents(guardedLookup(allowed))
  const inFlight = new Set<Promise<void>>()
  let closed = false
  let polling: Promise<void> | undefined
  let polledAt = -Infinity

  /** Sends one claimed delivery and says what to record of it; writes nothing itself. */
  async function attempt(delivery: ClaimedDelivery): Promise<AttemptRecord> {
    const { event: stored, endpoint } = delivery
    const event = renderEvent(stored)
    const body = JSON.stringify(event)
    const now = clock.now()
    const timestamp = Math.floor(now / 1000)
    let result: AttemptResult
    const url = new URL(endpoint.url)
    const literalRefused = literalRefusal(url, allowed)
    // The subscription rule again at the claim: an endpoint (or account) disabled since the fan-out is sent nothing more.
    const notSent = endpoint.disabledAt !== null ? 'the endpoint is disabled' : delivery.accountDisabled ? 'its account is disabled' : undefined
    if (notSent) result = { status: undefined, durationMs: 0, retryAfter: undefined, error: `not sent: ${notSent}` }
    else if (literalRefused) result = { status: undefined, durationMs: 0, retryAfter: undefined, error: `refused: ${literalRefused}` }
    else {
      const headers = {
        'webhook-id': eventId(stored.id),
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(endpoint, eventId(stored.id), timestamp, body, now),
      }
      result = await send(url, headers, body, agents, timeoutMs)
    }
    const at = clock.now()
    const ok = result.status !== undefined && result.status >= 200 && result.status < 300
    const gone = result.status === 410
    const attempts = delivery.attempts + 1
    const failingFor = at - (endpoint.failingSince ?? at)
    const outcome = ok
      ? ({ status: 'delivered' } as const)
      : gone || notSent || attempts > schedule.length
        ? ({ status: 'failed' } as const)
        : ({ status: 'pending', nextAttemptAt: at + wait(schedule[attempts - 1]!, result.retryAfter) } as const)
    const disable = !notSent && (gone || (!ok && failingFor >= DISABLE_AFTER_MS))
    return {
      deliveryId: delivery.id,
      leaseUntil: delivery.leaseUntil,
      trigger: delivery.trigger,
      at,
      durationMs: result.durationMs,
      responseStatus: result.status ?? null,
      error: result.error ?? null,
      outcome,
      ...(disable ? { disableBecause: gone ? 'The endpoint answered 410 Gone.' : 'Every attempt failed for 5 days.' } : {}),
    }
  }

  /**
   * Sends a claimed batch, then records every attempt in one transaction: on SQLite the
   * dispatcher takes the write lock once a batch, not once a delivery, and the API's
   * writes seldom wait for it. An attempt not yet recorded when the process dies is sent
   * again when its lease runs out (at least once).
   */
  async function deliver(claimed: readonly ClaimedDelivery[]): Promise<void> {
    const records = await Promise.all(
      claimed.map((delivery) => attempt(delivery).catch((error: unknown) => onError(error, 'a webhook delivery failed unexpectedly; it is retried when its lease ends'))),
    )
    await deliveries.recordAttempts(records.filter((record) => record !== undefined))
  }

  /** The wait before the next attempt: the schedule's, with jitter, or longer when the receiver asked (Retry-After). */
  function wait(base: number, retryAfter: number | undefined): number {
    const jittered = Math.round(base * (0.9 + 0.2 * random()))
    return retryAfter === undefined ? jittered : Math.max(jittered, retryAfter * 1000)
  }

  /**
   * Fans out the new events, then claims and sends due deliveries, a batch at a time,
   * until a batch comes back short: a backlog drains at the receivers' pace, not one
   * batch a poll. While the requests keep the process busy, one batch of each a poll.
   */
  async function poll(): Promise<void> {
    polledAt = performance.now()
    while ((await deliveries.fanOut(clock.now(), FAN_OUT_BATCH)) === FAN_OUT_BATCH && !closed && !busy());
    for (;;) {
      const claimed = await deliveries.claimDue(clock.now(), leaseMs, BATCH)
      if (closed) {
        for (const delivery of claimed) await deliveries.release(delivery.id, delivery.leaseUntil)
        return
      }
      const running: Promise<void> = deliver(claimed)
        .catch((error: unknown) => onError(error, 'could not record webhook attempts; they are sent again when their leases end'))
        .finally(() => inFlight.delete(running))
      inFlight.add(running)
      if (claimed.length < BATCH) return
      // At most one full batch in flight: the next is claimed when this one is sent and recorded.
      await running
      if (busy()) return
    }
  }

  function tick() {
    if (polling || closed) return
    // Giving way: the notifications of new events (one a write batch) wait for the next poll.
    if (performance.now() - polledAt < pollMs / 2 && busy()) return
    polling = poll()
      .catch((error: unknown) => onError(error, 'could not claim webhook deliveries'))
      .finally(() => {
        polling = undefined
      })
  }

  const timer = setInterval(tick, pollMs)
  if (!holdsProcess) timer.unref()
  // Woken at once when any process writes an event to fan out (PostgreSQL); the polling is the fallback.
  const stopWatching = listen
    ? deliveries.watch(tick, (error) => onError(error, 'lost the database notifications of new events; polling every second'))
    : Promise.resolve(async () => {})
  stopWatching.catch((error: unknown) => onError(error, 'could not LISTEN for new events; polling every second'))

  return {
    /** Looks for due deliveries now rather than at the next poll (a test event, a redelivery). */
    wake: tick,
    /** Looks for due deliveries now and waits until they are sent (tests). */
    async pollNow(): Promise<void> {
      await polling
      await poll()
      await Promise.all(inFlight)
    },
    /** Stops claiming, and waits for the attempts under way. */
    async close(): Promise<void> {
      closed = true
      clearInterval(timer)
      await (await stopWatching.catch(() => async () => {}))()
      await polling
      await Promise.all(inFlight)
      agents.destroy()
    },
  }
}

export type Dispatcher = ReturnType<typeof startDispatcher>
