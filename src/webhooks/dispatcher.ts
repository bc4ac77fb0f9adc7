// Delivers the outbox: every instance (and worker) runs one, or `petstore dispatch`
// runs them apart from the API's processes. It fans the new events out into
// deliveries (one per subscribed endpoint), then claims due deliveries for a lease
// (PostgreSQL: FOR UPDATE SKIP LOCKED, so N dispatchers take each once; SQLite: the
// single writer's UPDATE), sends each, and records the attempt under that lease. A
// dispatcher killed mid-delivery never records: its lease runs out and another takes
// the delivery again (at least once; receivers deduplicate by webhook-id). On close it
// stops claiming, lets the attempts under way finish, and gives back what it had
// claimed but not started. No request of the API ever waits for any of this.
//
// Isolation: every delivery is sent and recorded on its own, so no delivery waits for
// another; the claim takes no delivery of an endpoint that already has
// `perEndpoint` under a live lease (any dispatcher's), so an endpoint that never
// answers holds at most that many of the `maxInFlight` sockets, and the claims keep
// flowing to the others. Attempts that end together are recorded in one statement
// (on SQLite, one write lock for many), which claims too while there is a backlog
// (PostgreSQL: one statement, one round trip): the leases it gives back are its room.
//
// Throughput to one endpoint: a delivery is under lease from its claim to its record, a
// few statements' time, so `perEndpoint` leases alone would cap an endpoint at
// `perEndpoint` deliveries per record-and-claim. An endpoint that answers quickly gets
// up to `deliveries.claimAhead` more claimed ahead, as long as this dispatcher holds all of its
// leases (the store checks): they wait here and each starts as one of its requests
// ends, never more than `perEndpoint` under way, without waiting for the database.
import type { KeyObject } from 'node:crypto'
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import type { Clock } from '../clock.js'
import type { AttemptRecord, ClaimedDelivery, DeliveryQueue } from '../db/delivery-queue.js'
import { createAgents, DELIVERY_TIMEOUT_MS, send, type AttemptResult } from './deliver.js'
import { eventId, renderEvent } from './events.js'
import { guardedLookup, literalRefusal, portOf, type Cidr } from './outbound.js'
import type { SecretBox } from '../secrets/secret-box.js'
import { signatureHeader, signingKey } from './signature.js'

/** After the first attempt fails, the next ones wait about this long (±10 %): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; then the delivery has failed. */
export const RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]
/** An endpoint failing this long without a success is disabled. */
export const DISABLE_AFTER_MS = 5 * 86_400_000
/** Deliveries claimed at a time, at most. */
const BATCH = 64
/**
 * Attempts written in one statement at most; and how long an ended attempt waits for
 * others to be written with it. A write costs about 130 µs on SQLite however few it
 * records (15 µs more each): written one turn of the event loop at a time, a quick
 * endpoint's attempts went a few at a write. The wait is the lease's, not a receiver's.
 */
const RECORD_BATCH = 64
const RECORD_WAIT_MS = 5
/**
 * After a claim that found less than it asked for, the room a quick endpoint's ended
 * attempts must give back before the next claim (worthClaiming). (A delivery is under
 * lease from its claim to its record, a few statements' time, under load 10 ms each: the
 * rate to one endpoint is at most the deliveries held over that time, its `perEndpoint`
 * and those claimed ahead, `deliveries.claimAhead`.)
 */
const CLAIM_WHEN_FREED = 16
/** Signing secrets kept open at most (see `opened`). */
const OPENED_KEPT = 1_024
/** An endpoint answers quickly when its latest request took less than this, and none under way has been open this long. */
const FLOWING_MS = 1_000
/** How long an endpoint seen to answer slowly stays out of the claims' lag (`answered`). */
const SLOW_FOR_MS = 60_000
/** How long after its latest claim an endpoint still counts in the claims' lag (`frontiers`). */
const ACTIVE_MS = 10_000
/**
 * How long after its last claim an endpoint of which the dispatcher holds nothing still
 * counts in its lag: a few polls (one a second), and under the 3.75 s from which write
 * pacing divides a lag by the frontier's speed (write-pacing.ts).
 */
const CAUGHT_UP_AFTER_MS = 3_000
/**
 * A delivery held back is sent as its claim read its endpoint only this long after the
 * read (ms); older, the endpoint is read again first: disabled, deleted or pointed
 * elsewhere since, it is sent nothing more. (A change made through this process is seen
 * at once: endpointChanged.)
 */
export const REREAD_AFTER_MS = 100
/** Deliveries one dispatcher sends at once, across every endpoint. */
export const MAX_IN_FLIGHT = 512
/** Deliveries in flight to one endpoint, across the dispatchers (each claim's view). */
export const PER_ENDPOINT_IN_FLIGHT = 8
/** The share of its time a process's event loop may be busy and still have time to spare (spareTime). */
const SPARE_BELOW = 0.8

/** Whether the event loop was busy less than SPARE_BELOW of the last second or so (performance.eventLoopUtilization, sampled at most twice a second). */
function eventLoopHasSpareTime(): () => boolean {
  let last = performance.eventLoopUtilization()
  let spare = true
  return () => {
    const now = performance.eventLoopUtilization()
    const since = performance.eventLoopUtilization(now, last)
    if (since.idle + since.active >= 500) {
      spare = since.utilization < SPARE_BELOW
      last = now
    }
    return spare
  }
}

/**
 * With no time to spare here, an endpoint with all its requests under way is taken as
 * held back by its receiver when its latest answer, or a request still open, took at
 * least this long, and 4 times this process's event-loop delay: a receiver that takes
 * 300 ms while the loop runs 20 ms late is slow on its own.
 */
const RECEIVER_HOLDS_MS = 250

/** The 99th percentile of the event loop's delay since the last reading (at most every half second), in ms; `stop` ends the sampling. */
function eventLoopDelay(): { read: () => number; stop: () => void } {
  const histogram = monitorEventLoopDelay({ resolution: 20 })
  histogram.enable()
  let p99 = 0
  let readAt = performance.now()
  return {
    read() {
      const now = performance.now()
      if (now - readAt >= 500) {
        p99 = histogram.percentile(99) / 1e6
        histogram.reset()
        readAt = now
      }
      return p99
    },
    stop: () => histogram.disable(),
  }
}

/** Events fanned out per transaction. */
const FAN_OUT_BATCH = 500

/** What a claim took: how many it claimed of how many it asked for, and whether a write of attempts ended while it ran. */
interface Claimed {
  claimed: number
  asked: number
  overtaken: boolean
}

/** A scheduled delivery's first attempt: where the fan-out's events stand, which the claims' lag measures. */
const firstAttempt = ({ trigger, attempts }: ClaimedDelivery) => trigger === 'scheduled' && attempts === 0

/** What became of an attempt, as /metrics counts it. */
export type AttemptOutcome = 'delivered' | 'retrying' | 'failed' | 'not_sent'

export interface DispatcherOptions {
  deliveries: DeliveryQueue
  /** Opens the endpoints' sealed signing secrets. */
  secrets: SecretBox
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
  /** How long a delivery held back goes as its claim read its endpoint (REREAD_AFTER_MS) before the endpoint is read again. */
  rereadAfterMs?: number
  /** How long a claim holds (60 s): longer than an attempt may take, or a slow receiver is sent the event twice. */
  leaseMs?: number
  /** Deliveries this dispatcher sends at once (512: sockets, within a default limit of 1,024 open files). */
  maxInFlight?: number
  /** Deliveries in flight to one endpoint (8, PETSTORE_WEBHOOK_PER_ENDPOINT): a hanging receiver holds no more sockets than this. */
  perEndpoint?: number
  /** Keep the process alive while it runs (`petstore dispatch`, which has no server to); a server's dispatcher never holds its process open. */
  holdsProcess?: boolean
  /**
   * True while the API's requests keep this process busy (request-pressure.ts): the
   * dispatcher then gives way, one batch of each kind a poll and no wake-ups between
   * polls, and catches up when they slacken. Never, by default.
   */
  busy?: () => boolean
  /**
   * True while this process has time to spare (its event loop busy under SPARE_BELOW of
   * the last second, by default). An endpoint with all its `perEndpoint` requests under
   * way while there is time to spare is held back by its receiver, not by this
   * dispatcher: it stays out of `lagMs`.
   */
  spareTime?: () => boolean
  /**
   * This process's event-loop delay lately, in ms (the 99th percentile, by default): with
   * no time to spare, an endpoint whose requests take far longer than it is held back by
   * its receiver (RECEIVER_HOLDS_MS), and stays out of `lagMs` too.
   */
  loopDelayMs?: () => number
  onError?: (error: unknown, what: string) => void
  /** Told of each attempt once it is recorded: its outcome, and for a delivery, the ms from the event's creation (a manual one's queueing) to the 2xx. */
  onAttempt?: (outcome: AttemptOutcome, latencyMs: number | undefined) => void
}

export function startDispatcher({
  deliveries,
  secrets,
  clock,
  allowed,
  pollMs = 1_000,
  schedule = RETRY_SCHEDULE_MS,
  random = Math.random,
  listen = true,
  timeoutMs = DELIVERY_TIMEOUT_MS,
  leaseMs = 60_000,
  rereadAfterMs = REREAD_AFTER_MS,
  maxInFlight = MAX_IN_FLIGHT,
  perEndpoint = PER_ENDPOINT_IN_FLIGHT,
  holdsProcess = false,
  busy = () => false,
  spareTime = eventLoopHasSpareTime(),
  loopDelayMs,
  onError = () => {},
  onAttempt = () => {},
}: DispatcherOptions) {
  const agents = createAgents((url) => guardedLookup(allowed, portOf(url)))
  /**
   * Signing keys, by their secret's sealed text: opening the secret (AES-GCM) and making
   * an HMAC key of it at every delivery were a fifth of the dispatcher's CPU at a few
   * hundred deliveries a second. A rotated secret is another sealed text (the old one
   * ages out); bounded by starting afresh past OPENED_KEPT. The process holds the main
   * key that opens them all anyway.
   */
  const opened = new Map<string, KeyObject>()
  const open = (sealed: string) => {
    let key = opened.get(sealed)
    if (key === undefined) {
      key = signingKey(secrets.open(sealed))
      if (opened.size >= OPENED_KEPT) opened.clear()
      opened.set(sealed, key)
    }
    return key
  }
  /** Each delivery under way, until its attempt is recorded. */
  const inFlight = new Set<Promise<void>>()
  let closed = false
  let polling: Promise<void> | undefined
  /** Woken while polling: poll again when done, so no wake-up is lost. */
  let wokenWhilePolling = false
  /** New events may be waiting to be fanned out (set by the timer, a wake-up, a NOTIFY). */
  let fanOutDue = true
  /** The last claim took something, or found what was due held by its endpoints' limits: a finished delivery claims again at once. */
  let backlog = false
  let polledAt = -Infinity
  // How far behind this dispatcher is (`lagMs`: request-pressure.ts's floor, and the write
  // pacing's measure), as the time of an event it has yet to get to: the fan-out's, and
  // the claims'. Each undefined once caught up; both, until the first of them has run.
  /** When the youngest event of the latest fan-out that took a full batch was written: those after it wait. */
  let fanOutFrom: number | undefined
  /**
   * Where the claims are, endpoint by endpoint (those not seen slow): when the oldest
   * event of its latest claim for a first attempt was written (`from`), and when that
   * was (`at`). The claims' lag is the least of the endpoints active within ACTIVE_MS:
   * the best served. The claims take the oldest due first, so when this dispatcher is
   * behind, every endpoint is; when one endpoint is behind alone (too slow for what it
   * is sent, for its PETSTORE_WEBHOOK_PER_ENDPOINT), that is its own backlog, and it
   * paces nobody's writes as long as another endpoint keeps up. (An endpoint caught up
   * shows it by its next claim, of events just written; one sent nothing for ACTIVE_MS
   * no longer counts.)
   */
  const frontiers = new Map<number, { from: number; at: number }>()
  let lagKnown = false
  /**
   * How long each endpoint's latest request took, and when it ended (clock time), kept
   * after the endpoint's last delivery here is recorded: the next claim for it gets the
   * room of an endpoint that answers quickly at once. (Forgotten with its last delivery,
   * a quick endpoint whose deliveries all ended between two claims was claimed for as a
   * new one, `perEndpoint` at a time: on PostgreSQL under load, 8 per round trip.)
   * And an endpoint seen to answer slowly (FLOWING_MS or more) stays out of the claims'
   * lag for SLOW_FOR_MS: one that is slow or never answers falls behind alone, which is no
   * measure of this dispatcher, and slows nobody's writes.
   */
  const answered = new Map<number, { ms: number; at: number }>()
  /** How long the endpoint's latest request took, if it ended within SLOW_FOR_MS of `at`. */
  function recentAnswer(endpointId: number, at: number): number | undefined {
    const latest = answered.get(endpointId)
    return latest !== undefined && at - latest.at < SLOW_FOR_MS ? latest.ms : undefined
  }
  const seenSlow = (endpointId: number, at: number) => (recentAnswer(endpointId, at) ?? 0) >= FLOWING_MS

  /** What was sent, or why not: the receiver's answer, a refusal, or the error that stopped the attempt. */
  async function send1(delivery: ClaimedDelivery): Promise<AttemptResult> {
    const { event: stored, endpoint } = delivery
    // The subscription rule again at the claim (the store's `refusal`): an endpoint or account disabled, or a type unsubscribed, since the fan-out is sent nothing more.
    if (delivery.refusal !== undefined) return { status: undefined, durationMs: 0, retryAfter: undefined, error: `not sent: ${delivery.refusal}` }
    const url = new URL(endpoint.url)
    const literalRefused = literalRefusal(url, allowed)
    if (literalRefused) return { status: undefined, durationMs: 0, retryAfter: undefined, error: `refused: ${literalRefused}` }
    const body = JSON.stringify(renderEvent(stored))
    const now = clock.now()
    const timestamp = Math.floor(now / 1000)
    const headers = {
      'webhook-id': eventId(stored.id),
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(
        { secret: open(delivery.secrets.secret), previousSecret: delivery.secrets.previousSecret && open(delivery.secrets.previousSecret), previousSecretUntil: endpoint.previousSecretUntil },
        eventId(stored.id),
        timestamp,
        body,
        now,
      ),
    }
    return send(url, headers, body, agents, timeoutMs)
  }

  /** Sends one claimed delivery and says what to record of it; writes nothing itself. An attempt that throws is a failed attempt like any other. */
  async function attempt(delivery: ClaimedDelivery): Promise<AttemptRecord> {
    const result = await send1(delivery).catch(
      (error: unknown): AttemptResult => ({ status: undefined, durationMs: 0, retryAfter: undefined, error: `could not be sent: ${error instanceof Error ? error.message : String(error)}` }),
    )
    const notSent = delivery.refusal !== undefined
    const { endpoint } = delivery
    const at = clock.now()
    const ok = result.status !== undefined && result.status >= 200 && result.status < 300
    const gone = result.status === 410
    const attempts = delivery.attempts + 1
    const failingFor = at - (endpoint.failingSince ?? at)
    const outcome = ok
      ? ({ status: 'delivered' } as const)
      : gone || notSent || attempts > schedule.length
        ? ({ status: 'failed' } as const)
        : ({ status: 'pending', nextAttemptAt: at + wait(attempts, result.retryAfter) } as const)
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
   * The wait before attempt `attempts + 1`: the schedule's, with jitter, or longer when
   * the receiver asked (Retry-After), but never past the schedule's next step (nor its
   * last, 10 h): a receiver cannot push its event out of the 30 days it is kept.
   */
  function wait(attempts: number, retryAfter: number | undefined): number {
    const jittered = Math.round(schedule[attempts - 1]! * (0.9 + 0.2 * random()))
    if (retryAfter === undefined) return jittered
    const ceiling = schedule[Math.min(attempts, schedule.length - 1)]!
    return Math.max(jittered, Math.min(retryAfter * 1000, ceiling))
  }

  /** What /metrics is told of an attempt, once it is recorded. */
  function observe(record: AttemptRecord, delivery: ClaimedDelivery) {
    if (record.outcome.status === 'delivered') onAttempt('delivered', record.at - (delivery.trigger === 'manual' ? delivery.queuedAt : delivery.event.createdAt))
    else onAttempt(delivery.refusal !== undefined ? 'not_sent' : record.outcome.status === 'pending' ? 'retrying' : 'failed', undefined)
  }

  // Attempts that ended, waiting to be written, in one statement: those that end within
  // RECORD_WAIT_MS of the first (or RECORD_BATCH of them), and every one that ends while a
  // write is under way, go in the next. None waits for an attempt still under way.
  // While there is a backlog, the write claims too (one round trip on PostgreSQL): the
  // leases it gives back are the room of that claim.
  const unrecorded: { record: AttemptRecord; delivery: ClaimedDelivery; written: () => void }[] = []
  /** The claim under way (a poll's, or a write's that claims too): one at a time. */
  let claiming: Promise<Claimed> | undefined
  let recording: Promise<void> | undefined
  /** Writes of attempts ended so far: a claim made while one ended may not have seen the leases it gave back. */
  let writesEnded = 0
  function startRecording() {
    if (recording || unrecorded.length === 0) return
    const batch = unrecorded.splice(0, RECORD_BATCH)
    const records = batch.map(({ record }) => record)
    // Claiming too, unless another claim is under way (one at a time), giving way (then
    // the next poll claims, one batch a poll), or there is too little room to be worth it.
    const request = mayClaim() && claiming === undefined && worthClaiming() ? claimRequest() : undefined
    const since = writesEnded
    let written: Promise<boolean[]>
    if (request) {
      reserved += request.limit
      const both = deliveries.recordAndClaim(records, request).finally(() => (reserved -= request.limit))
      // The claim under way until it answers; its failure is the write's, told once (below).
      claiming = both
        .then(
          ({ claimed }) => took(claimed, request.limit, since),
          () => ({ claimed: 0, asked: request.limit, overtaken: false }),
        )
        .finally(() => (claiming = undefined))
      written = both.then(({ recorded }) => recorded)
    } else written = deliveries.recordAttempts(records)
    recording = written
      .then(
        (recorded) => {
          for (const [i, { record, delivery }] of batch.entries()) if (recorded[i]) observe(record, delivery)
        },
        (error: unknown) => onError(error, 'could not record webhook attempts; they are sent again when their leases end'),
      )
      .finally(() => {
        writesEnded++
        for (const { written } of batch) written()
        recording = undefined
        // Their leases are given back: claim more at once while there is a backlog, even
        // while a poll is fanning out, unless giving way or this write claimed already.
        if (!request && mayClaim() && worthClaiming()) claimOnce().catch((error: unknown) => onError(error, 'could not claim webhook deliveries'))
        startRecording()
      })
  }
  let recordTimer: NodeJS.Timeout | undefined
  const record = (attempted: AttemptRecord, delivery: ClaimedDelivery) =>
    new Promise<void>((written) => {
      unrecorded.push({ record: attempted, delivery, written })
      freeing(delivery)
      if (unrecorded.length >= RECORD_BATCH || closed) {
        clearTimeout(recordTimer)
        recordTimer = undefined
        startRecording()
      } else
        recordTimer ??= setTimeout(() => {
          recordTimer = undefined
          startRecording()
        }, RECORD_WAIT_MS)
    })

  /** What this dispatcher does with one endpoint's deliveries. */
  interface EndpointWork {
    /** Its requests under way: never more than `perEndpoint`. */
    sending: number
    /** When each of them started (performance.now()). */
    startedAt: number[]
    /** Claimed ahead, oldest first: each starts as one of the requests ends. */
    waiting: ClaimedDelivery[]
    /** How long its latest request took, answer included. */
    lastMs: number | undefined
    /** Its deliveries this dispatcher holds (under way, held back, or being recorded): the entry goes with the last. */
    held: number
    /** Of them, first attempts of the fan-out's (`firstAttempt`): what the claims' lag measures; a retry is not lag. */
    heldFirst: number
    /** Its deliveries held back are being read again (`reread`): none starts meanwhile. */
    rereading: boolean
  }
  const endpoints = new Map<number, EndpointWork>()
  /** Each delivery claimed and not yet recorded (or given back), by id: its endpoint. */
  const held = new Map<number, number>()
  /** When each delivery held back had its endpoint read (performance.now()): at its claim, or since (`reread`). */
  const readAt = new Map<number, number>()
  /** Sockets open: every endpoint's `sending`. */
  let sending = 0
  /** Every endpoint's `waiting`. */
  let waiting = 0
  /** What the claim under way asked for: room taken until it answers. */
  let reserved = 0
  /** Gives back under way (a dispatcher closing, a delivery claimed ahead that can no longer go). */
  const givingBack = new Set<Promise<void>>()
  /** Reads again of endpoints under way (reread): their deliveries held back go when each ends. */
  const rereads = new Set<Promise<void>>()

  // A claim costs about 500 µs however little it finds (it looks at the CLAIM_LOOKS_AT
  // oldest due deliveries): made at every write of attempts, with one quick endpoint
  // taking a few deliveries each time, claims were half the dispatcher's CPU on SQLite.
  // After a claim that found less than it asked for (the queue's due work all taken, or
  // held by full endpoints), the next waits until there is room worth a claim:
  // CLAIM_WHEN_FREED given back by a quick endpoint's attempts, or any by an endpoint with
  // nothing more held back (a slow one, or a quick one running dry). The poll claims too.
  /** A claim beyond the poll's may be made now: there is a backlog, and the dispatcher is neither closing nor giving way. */
  const mayClaim = () => backlog && !closed && !busy()
  /** The last claim took all it asked for: more may be due. */
  let lastClaimFull = true
  /** Room given back (by the attempts to record) since the last claim, in the units of worthClaiming. */
  let freedSinceClaim = 0
  const worthClaiming = () => lastClaimFull || freedSinceClaim >= CLAIM_WHEN_FREED
  /** An attempt ended: its lease is given back when it is recorded (with the next claim, if one goes with the write). */
  function freeing(delivery: ClaimedDelivery) {
    const work = endpoints.get(delivery.endpoint.id)
    freedSinceClaim += work !== undefined && work.waiting.length > 0 ? 1 : CLAIM_WHEN_FREED
  }

  /**
   * An endpoint that answers quickly gets deliveries claimed ahead: its last request took
   * under FLOWING_MS and none of those under way has been open that long. One that
   * hangs, or is new to this dispatcher, gets `perEndpoint` and no more.
   */
  function flowing(work: EndpointWork, now: number): boolean {
    return work.lastMs !== undefined && work.lastMs < FLOWING_MS && work.startedAt.every((at) => now - at < FLOWING_MS)
  }

  /**
   * An endpoint seen to answer slowly: its latest request took FLOWING_MS or more, or one
   * under way has been open that long. (Not one this dispatcher has not yet heard from:
   * deliveries claimed ahead for it, its entry gone with its last recorded one while the
   * claim was under way, are not given back before its first answer.)
   */
  function slow(work: EndpointWork, now: number): boolean {
    return tookAtLeast(work, now, FLOWING_MS)
  }

  /** Whether the endpoint's latest request took `ms` or more, or one under way has been open that long. */
  function tookAtLeast(work: EndpointWork, now: number, ms: number): boolean {
    return (work.lastMs !== undefined && work.lastMs >= ms) || work.startedAt.some((at) => now - at >= ms)
  }

  const loopDelay = loopDelayMs === undefined ? eventLoopDelay() : { read: loopDelayMs, stop: () => {} }
  /** With all its requests under way and no time to spare here: whether its receiver is what holds it back (RECEIVER_HOLDS_MS). */
  function receiverHolds(work: EndpointWork, now: number): boolean {
    return tookAtLeast(work, now, Math.max(RECEIVER_HOLDS_MS, 4 * loopDelay.read()))
  }

  function noteAnswer(endpointId: number, ms: number, at: number) {
    if (answered.size >= OPENED_KEPT) answered.clear()
    answered.set(endpointId, { ms, at })
    // Seen slow: out of the claims' lag at once.
    if (ms >= FLOWING_MS) frontiers.delete(endpointId)
  }

  /** A delivery this dispatcher no longer holds: recorded, or given back. */
  function letGo(delivery: ClaimedDelivery) {
    readAt.delete(delivery.id)
    if (!held.delete(delivery.id)) return
    const work = endpoints.get(delivery.endpoint.id)
    if (!work) return
    if (firstAttempt(delivery)) work.heldFirst--
    if (--work.held === 0) endpoints.delete(delivery.endpoint.id)
  }

  function giveBack(delivery: ClaimedDelivery) {
    letGo(delivery)
    const released: Promise<void> = deliveries
      .release(delivery.id, delivery.leaseUntil)
      .catch((error: unknown) => onError(error, 'could not give a webhook delivery back; it is sent when its lease ends'))
      .finally(() => givingBack.delete(released))
    givingBack.add(released)
  }

  /** Gives back every delivery held back for the endpoint. */
  function giveBackWaiting(work: EndpointWork) {
    waiting -= work.waiting.length
    for (const delivery of work.waiting.splice(0)) giveBack(delivery)
  }

  /** A claimed delivery: sent at once if its endpoint has room, else held back until it has. */
  function take(delivery: ClaimedDelivery) {
    const endpointId = delivery.endpoint.id
    held.set(delivery.id, endpointId)
    let work = endpoints.get(endpointId)
    if (!work) endpoints.set(endpointId, (work = { sending: 0, startedAt: [], waiting: [], lastMs: recentAnswer(endpointId, clock.now()), held: 0, heldFirst: 0, rereading: false }))
    work.held++
    if (firstAttempt(delivery)) work.heldFirst++
    if (work.waiting.length === 0 && work.sending < perEndpoint && !work.rereading) start(delivery, work)
    else {
      readAt.set(delivery.id, performance.now())
      work.waiting.push(delivery)
      waiting++
      fill(work)
    }
  }

  /** Starts the endpoint's deliveries held back, oldest first, while it has room; those held a while, once their endpoint is read again. */
  function fill(work: EndpointWork) {
    while (work.sending < perEndpoint && work.waiting.length > 0 && !work.rereading) {
      if (!closed && performance.now() - (readAt.get(work.waiting[0]!.id) ?? -Infinity) > rereadAfterMs) {
        reread(work)
        return
      }
      const next = work.waiting.shift()!
      waiting--
      if (closed) giveBack(next)
      // One held back goes only with as much of its lease left as an attempt may take: else another dispatcher could send it too.
      else if (next.leaseUntil - clock.now() < timeoutMs) giveBack(next)
      else start(next, work)
    }
  }

  /**
   * Reads again where the endpoint's deliveries held back would go (the store's `targets`),
   * then sends them as they are now: to its URL now, signed with its secrets now, or
   * refused ("not sent") when the rule no longer lets them go; one whose endpoint was
   * deleted is dropped (its row went with it). On failure, they are given back.
   */
  function reread(work: EndpointWork) {
    work.rereading = true
    const asked = new Set(work.waiting.map((delivery) => delivery.id))
    const running: Promise<void> = deliveries
      .targets([...asked])
      .then(
        (now) => {
          const at = performance.now()
          const kept: ClaimedDelivery[] = []
          for (const delivery of work.waiting) {
            if (!asked.has(delivery.id)) kept.push(delivery)
            else if (!now.has(delivery.id)) {
              waiting--
              letGo(delivery)
            } else {
              const { endpoint, secrets, refusal } = now.get(delivery.id)!
              const fresh: ClaimedDelivery = { ...delivery, endpoint, secrets }
              if (refusal === undefined) delete fresh.refusal
              else fresh.refusal = refusal
              kept.push(fresh)
              readAt.set(delivery.id, at)
            }
          }
          work.waiting = kept
        },
        (error: unknown) => {
          onError(error, 'could not read a webhook endpoint again; its deliveries held back are given back')
          const back = work.waiting.filter((delivery) => asked.has(delivery.id))
          work.waiting = work.waiting.filter((delivery) => !asked.has(delivery.id))
          waiting -= back.length
          for (const delivery of back) giveBack(delivery)
        },
      )
      .finally(() => {
        work.rereading = false
        rereads.delete(running)
        fill(work)
      })
    rereads.add(running)
  }

  /** Sends a claimed delivery on its own: it waits for no other, and none waits for it. */
  function start(delivery: ClaimedDelivery, work: EndpointWork) {
    const startedAt = performance.now()
    work.sending++
    work.startedAt.push(startedAt)
    sending++
    /** The request ended: its socket is free, and the endpoint's next delivery held back goes at once, before this one is recorded. */
    const ended = () => {
      work.sending--
      work.startedAt.splice(work.startedAt.indexOf(startedAt), 1)
      sending--
      fill(work)
    }
    const running: Promise<void> = attempt(delivery)
      .then((attempted) => {
        if (delivery.refusal === undefined) {
          work.lastMs = attempted.durationMs
          noteAnswer(delivery.endpoint.id, attempted.durationMs, attempted.at)
        }
        ended()
        return record(attempted, delivery)
      }, (error: unknown) => {
        ended()
        throw error
      })
      .catch((error: unknown) => onError(error, 'a webhook delivery failed unexpectedly; it is retried when its lease ends'))
      .finally(() => {
        inFlight.delete(running)
        letGo(delivery)
        // A write of attempts that failed claims nothing (startRecording): the last delivery under way claims again.
        if (mayClaim() && inFlight.size === 0) tick()
      })
    inFlight.add(running)
  }

  const claimOnce = () =>
    (claiming ??= claim().finally(() => {
      claiming = undefined
    }))

  /**
   * What the next claim asks for: as much as there is room for, sockets and deliveries
   * held back together within `maxInFlight`; and ahead for the endpoints that answer
   * quickly. Undefined when there is no room. An endpoint that stopped answering quickly
   * gives back what was claimed ahead for it first.
   */
  function claimRequest() {
    const at = performance.now()
    // Held back, a delivery goes only with time for its attempt left under its lease
    // (fill), and only while its endpoint answers within FLOWING_MS (else given back
    // below): with a lease barely longer than an attempt, none is held back.
    const extra = leaseMs >= 2 * timeoutMs ? deliveries.claimAhead : 0
    const ahead: { extra: number; endpoints: number[]; held: number[] } = { extra, endpoints: [], held: [] }
    for (const [endpointId, work] of endpoints) {
      if (flowing(work, at)) ahead.endpoints.push(endpointId)
      else if (slow(work, at)) giveBackWaiting(work)
    }
    // And those with nothing here now whose latest request, lately, was quick.
    const now = clock.now()
    for (const endpointId of answered.keys()) if (!endpoints.has(endpointId) && (recentAnswer(endpointId, now) ?? FLOWING_MS) < FLOWING_MS) ahead.endpoints.push(endpointId)
    const flows = new Set(ahead.endpoints)
    for (const [deliveryId, endpointId] of held) if (flows.has(endpointId)) ahead.held.push(deliveryId)
    const limit = Math.min(BATCH, maxInFlight - sending - waiting - reserved)
    return limit > 0 ? { now, leaseMs, limit, perEndpoint, ahead } : undefined
  }

  /** Claims what there is room for and starts sending it. */
  async function claim(): Promise<Claimed> {
    const request = claimRequest()
    if (!request) return { claimed: 0, asked: 0, overtaken: false }
    const since = writesEnded
    reserved += request.limit
    try {
      return took(await deliveries.claimDue(request.now, request.leaseMs, request.limit, request.perEndpoint, request.ahead), request.limit, since)
    } finally {
      reserved -= request.limit
    }
  }

  /**
   * Takes what a claim answered: each sent, or held back behind its endpoint's requests; a
   * closing dispatcher gives them back. `since`: writesEnded when the claim was asked.
   */
  function took(claimed: ClaimedDelivery[], asked: number, since: number): Claimed {
    // A write of attempts that ended while the claim ran gave back leases it may not have
    // seen: its deliveries' endpoints may have room now. (Without this, a claim that found
    // every endpoint full, answering after the last attempt was recorded, ended the
    // backlog with deliveries due, until the next poll.)
    const overtaken = writesEnded !== since
    if (closed) {
      for (const delivery of claimed) giveBack(delivery)
      return { claimed: 0, asked, overtaken }
    }
    // Nothing claimed, yet deliveries in flight: their endpoints may have had no room, so claim again as each ends.
    backlog = claimed.length > 0 || inFlight.size > 0 || overtaken
    lastClaimFull = claimed.length >= asked
    freedSinceClaim = 0
    lagKnown = true
    const at = clock.now()
    const oldest = new Map<number, number>()
    for (const delivery of claimed) {
      const { endpoint, event } = delivery
      if (firstAttempt(delivery) && !seenSlow(endpoint.id, at)) oldest.set(endpoint.id, Math.min(oldest.get(endpoint.id) ?? Infinity, event.createdAt))
    }
    for (const [endpointId, from] of oldest) frontiers.set(endpointId, { from, at })
    for (const [endpointId, frontier] of frontiers) if (at - frontier.at >= ACTIVE_MS) frontiers.delete(endpointId)
    for (const delivery of claimed) take(delivery)
    return { claimed: claimed.length, asked, overtaken }
  }

  /**
   * Fans out new events and claims due deliveries in turn, a batch of each at a time,
   * until neither finds more: the first deliveries of a backlog go out while the rest is
   * still being fanned out, and a backlog drains at the receivers' pace, not one batch a
   * poll. With every slot taken, it waits for one. While the requests keep the process
   * busy, one batch of each a poll.
   */
  async function poll(): Promise<void> {
    polledAt = performance.now()
    // Fanned out only when there may be new events (a poll's timer, a wake-up, a NOTIFY):
    // a claim made because a delivery ended has nothing to fan out, and on SQLite a
    // fan-out is a write transaction even when it finds nothing.
    let fanning = fanOutDue
    fanOutDue = false
    while (!closed) {
      if (fanning) {
        const { events, newestAt } = await deliveries.fanOut(clock.now(), FAN_OUT_BATCH)
        fanning = events === FAN_OUT_BATCH
        // A full batch: more wait behind it, written after its youngest.
        fanOutFrom = fanning ? newestAt : undefined
        lagKnown = true
      }
      if (closed) return
      const { claimed, asked, overtaken } = await claimOnce()
      if (busy()) return
      const full = asked > 0 && claimed === asked
      // Overtaken with nothing under way or being written: no write's end will claim
      // again, so this poll does. (With attempts under way, their writes claim: looping
      // here would claim without pause while they last.)
      const unwatched = overtaken && inFlight.size === 0 && recording === undefined
      if (!fanning && !full && asked > 0 && !unwatched) return
      if (inFlight.size > 0 && (asked <= 0 || (full && sending + waiting >= maxInFlight))) await Promise.race(inFlight)
      // SQLite's statements are synchronous (their promises settle as microtasks): without
      // this, fanning out a large backlog would hold the event loop until it is done, and
      // no delivery could be sent or recorded meanwhile.
      else await new Promise((resolve) => setImmediate(resolve))
    }
  }

  function tick() {
    if (closed) return
    if (polling) {
      wokenWhilePolling = true
      return
    }
    // Giving way: the notifications of new events (one a write batch) wait for the next poll.
    if (performance.now() - polledAt < pollMs / 2 && busy()) return
    runPoll()
  }

  function runPoll(): Promise<void> {
    wokenWhilePolling = false
    polling = poll()
      .catch((error: unknown) => onError(error, 'could not claim webhook deliveries'))
      .finally(() => {
        polling = undefined
        if (wokenWhilePolling) tick()
      })
    return polling
  }

  /** A poll that fans out too: the timer, a wake-up (a test event, a redelivery), a NOTIFY. */
  const wake = () => {
    fanOutDue = true
    tick()
  }
  const timer = setInterval(wake, pollMs)
  if (!holdsProcess) timer.unref()
  // Woken at once when any process writes an event to fan out (PostgreSQL); the polling is the fallback.
  const stopWatching = listen
    ? deliveries.watch(wake, (error) => onError(error, 'lost the database notifications of new events; polling every second'))
    : Promise.resolve(async () => {})
  stopWatching.catch((error: unknown) => onError(error, 'could not LISTEN for new events; polling every second'))

  /** Until nothing is being polled, sent or recorded. */
  async function settled(): Promise<void> {
    while (polling || inFlight.size > 0 || recording || claiming || givingBack.size > 0 || rereads.size > 0) {
      await polling
      await claiming
      await Promise.all(inFlight)
      await recording
      await Promise.all(givingBack)
      await Promise.all(rereads)
    }
  }

  return {
    /** Looks for due deliveries now rather than at the next poll (a test event, a redelivery). */
    wake,
    /** Looks for due deliveries now and waits until they, and any claimed after them, are sent and recorded (tests). */
    async pollNow(): Promise<void> {
      await settled()
      fanOutDue = true
      await runPoll()
      await settled()
    },
    /** How far behind it is, in ms: the age of the events its fan-out and its claims have yet to get to; 0 once caught up; undefined before it knows. */
    get lagMs() {
      if (!lagKnown) return undefined
      const now = clock.now()
      let claims = -Infinity
      // An endpoint of which this dispatcher holds nothing counts only just after its claim:
      // its deliveries are sent, and a poll a second claims any more that are due. (Kept
      // for ACTIVE_MS, an idle service read up to 10 s behind, and its writes were paced.)
      // Nor does one of which it holds only retries: a receiver that fails fast, retried
      // seconds later, read as that far behind, and paced every tenant's writes.
      // Nor one with all its requests under way while this process has time to spare, or
      // whose requests take far longer than this process's event loop runs late: its
      // receiver is what holds it back (an endpoint that answers in 900 ms takes 9 a second),
      // and counted, it alone paced every tenant's writes to that.
      const spare = spareTime()
      const sinceStart = performance.now()
      for (const [endpointId, { from, at }] of frontiers) {
        const work = endpoints.get(endpointId)
        if (work !== undefined && work.sending >= perEndpoint && (spare || receiverHolds(work, sinceStart))) continue
        if (now - at < ACTIVE_MS && ((work?.heldFirst ?? 0) > 0 || now - at < CAUGHT_UP_AFTER_MS)) claims = Math.max(claims, from)
      }
      const from = Math.min(fanOutFrom ?? Infinity, claims === -Infinity ? Infinity : claims)
      return from === Infinity ? 0 : Math.max(0, now - from)
    },
    /**
     * The endpoint was changed, disabled or deleted through this process: what is held
     * back for it is read again before it goes, whatever rereadAfterMs says.
     */
    endpointChanged(endpointId: number): void {
      const work = endpoints.get(endpointId)
      if (!work) return
      for (const delivery of work.waiting) readAt.set(delivery.id, -Infinity)
      fill(work)
    },
    /** How many deliveries it is sending now. */
    get inFlight() {
      return inFlight.size
    },
    /** Stops claiming, and waits for the attempts under way. */
    async close(): Promise<void> {
      closed = true
      clearInterval(timer)
      // What was claimed ahead goes back at once, not after the requests before it.
      for (const work of endpoints.values()) giveBackWaiting(work)
      await (await stopWatching.catch(() => async () => {}))()
      await settled()
      agents.destroy()
      loopDelay.stop()
    },
  }
}

export type Dispatcher = ReturnType<typeof startDispatcher>
