// Managing webhooks: an account's endpoints (create, read, change, delete, rotate the
// secret, send a test event, read the attempts) and its events (list, redeliver). The
// one service under routes/v1/webhooks.ts, as key-admin.ts is under the keys routes:
// the route parses and shapes HTTP, this decides.
//
// An endpoint belongs to the account whose key made it, and everything here is asked
// for an account: another account's endpoint or event is answered as a missing one
// (undefined), never told apart. Deliveries are the dispatchers' (dispatcher.ts), never
// a request's: a test event or a redelivery is queued, and the dispatcher woken.
import type { Clock } from '../clock.js'
import type { EndpointChanges, EventQuery, StoredAttempt, StoredEndpoint, WebhookEndpointsStore } from '../db/webhook-endpoints-store.js'
import type { DeliveryAttempt, NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch } from '../schemas/webhook.js'
import { TEST_EVENT } from '../vocabulary/event-types.js'
import { parseEventId, renderEvent, type Event } from './events.js'
import { checkUrl, OutboundRefused, type Cidr } from './outbound.js'
import type { SealingCompletion } from '../idempotency/idempotency.js'
import type { SecretBox } from '../secrets/secret-box.js'
import { newSecret } from './signature.js'

export const DEFAULT_SECRET_GRACE_S = 86_400
export const MAX_SECRET_GRACE_S = 7 * 86_400
/** How many attempts an endpoint's deliveries list shows. */
export const ATTEMPTS_SHOWN = 100

/** A value the service refuses (a URL it will not send to); `field` names it. */
export class WebhookAdminError extends Error {
  override name = 'WebhookAdminError'
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message)
  }
}

/** The account has as many endpoints as it may (PETSTORE_WEBHOOK_MAX_ENDPOINTS). */
export class EndpointLimitReached extends Error {
  override name = 'EndpointLimitReached'
  constructor(readonly limit: number) {
    super(`This account has ${limit} webhook endpoints, as many as it may have: delete one, or subscribe one of them to more event types.`)
  }
}

/** Its subscription kept changing while a change of it was authorised: the caller retries. */
export class EndpointChangedMeanwhile extends Error {
  override name = 'EndpointChangedMeanwhile'
  constructor(readonly id: number) {
    super(`Webhook endpoint ${id} was changed by other requests while this one ran: nothing was changed; retry.`)
  }
}

/** How many times a change is authorised again when the endpoint's subscription changed meanwhile. */
const AUTHORISE_TRIES = 3

/** A test event for an endpoint that is sent nothing: it would be queued, and refused at once. */
export class EndpointDisabled extends Error {
  override name = 'EndpointDisabled'
  constructor(readonly id: number) {
    super(`Webhook endpoint ${id} is disabled, and is sent nothing, test events included: enable it first (PATCH {"enabled": true}).`)
  }
}

export interface WebhookAdminOptions {
  endpoints: WebhookEndpointsStore
  clock: Clock
  /** http:// URLs are accepted outside production. */
  allowHttp: boolean
  /** Private ranges an endpoint may point at nonetheless (tests, a private network). */
  allowed: readonly Cidr[]
  /** Endpoints an account may have. */
  maxEndpoints: number
  /** Seals the signing secrets before the store sees them. */
  secrets: SecretBox
  /** Wakes this instance's dispatcher (a test event, a redelivery): sent now rather than at the next poll. */
  wake: () => void
  /** Tells this instance's dispatcher an endpoint was changed, disabled or deleted: it reads the endpoint again before sending what it holds back for it. */
  endpointChanged?: (endpointId: number) => void
}

/** A page of events as the store reads them, for the caller's account. */
export type EventsQuery = Omit<EventQuery, 'accountId'>

function view(endpoint: StoredEndpoint, secret?: string): WebhookEndpoint {
  return {
    id: endpoint.id,
    url: endpoint.url,
    description: endpoint.description,
    enabledEvents: endpoint.enabledEvents.split(' '),
    status: endpoint.disabledAt === null ? 'enabled' : 'disabled',
    disabledAt: endpoint.disabledAt === null ? null : new Date(endpoint.disabledAt).toISOString(),
    createdAt: new Date(endpoint.createdAt).toISOString(),
    ...(secret === undefined ? {} : { secret }),
  }
}

/** `latest`: the newest attempt of its delivery, the one that says when the next is due. */
function attemptView(attempt: StoredAttempt, latest: boolean): DeliveryAttempt {
  const next = latest ? attempt.deliveryNextAttemptAt : null
  return {
    eventId: `evt_${attempt.eventId}`,
    trigger: attempt.trigger,
    at: new Date(attempt.at).toISOString(),
    durationMs: attempt.durationMs,
    responseStatus: attempt.responseStatus,
    error: attempt.error,
    nextAttemptAt: next === null ? null : new Date(next).toISOString(),
  }
}

/** Event types as stored: space-separated and sorted, or `*` for all. */
const eventsList = (events: readonly string[]) => (events.includes('*') ? '*' : [...events].sort().join(' '))

export function createWebhookAdmin({ endpoints, clock, allowHttp, allowed, maxEndpoints, secrets, wake, endpointChanged = () => {} }: WebhookAdminOptions) {
  async function checked(url: string): Promise<string> {
    try {
      return (await checkUrl(url, { allowHttp, allowed })).href
    } catch (error) {
      if (error instanceof OutboundRefused) throw new WebhookAdminError(error.message, 'url')
      throw error
    }
  }

  /**
   * The account's endpoint `id` as it stands, shown to `authorise` (which throws to
   * refuse) before anything else is done: the target is checked, not only the new values.
   * Undefined when the account has no such endpoint.
   */
  async function authorised(accountId: number, id: number, authorise: (current: WebhookEndpoint) => void): Promise<StoredEndpoint | undefined> {
    const current = await endpoints.endpoint(accountId, id)
    if (current) authorise(view(current))
    return current
  }

  /**
   * `write` (given the subscription to write over, a compare-and-set) on the endpoint as
   * authorised: changed meanwhile (while its URL was looked up, say), it is read and
   * authorised again, so that no type the caller may not read lands where it says.
   * Undefined when the endpoint is gone.
   */
  async function writeOver(accountId: number, id: number, current: StoredEndpoint, authorise: (current: WebhookEndpoint) => void, write: (onlyIf: { enabledEvents: string }) => Promise<StoredEndpoint | undefined>): Promise<StoredEndpoint | undefined> {
    for (let tries = 1; ; tries++) {
      const written = await write({ enabledEvents: current.enabledEvents })
      if (written) {
        endpointChanged(id)
        return written
      }
      if (tries === AUTHORISE_TRIES) throw new EndpointChangedMeanwhile(id)
      const now = await authorised(accountId, id, authorise)
      if (!now) return undefined
      current = now
    }
  }

  /** Why a redelivery of an event of `type` went to no endpoint of the account. */
  async function whyNone(accountId: number, type: string): Promise<string> {
    if (type === TEST_EVENT) return 'A test event goes only to the endpoint it was made for, which is disabled or deleted: send another with POST /v1/webhook-endpoints/{id}/test.'
    const mine = await endpoints.endpoints(accountId)
    if (mine.length === 0) return 'This account has no webhook endpoint.'
    const enabled = mine.filter((endpoint) => endpoint.disabledAt === null)
    if (enabled.length === 0) return 'Every webhook endpoint of this account is disabled: enable one with PATCH /v1/webhook-endpoints/{id} {"enabled": true}.'
    return `No enabled webhook endpoint of this account subscribes to ${type} (enabledEvents).`
  }

  return {
    /** A page of the account's events and every pet event, newest first; `nextBeforeId` (the last one's id) when older ones match. */
    async events(accountId: number, { types, beforeId, limit }: EventsQuery): Promise<{ events: Event[]; nextBeforeId: number | undefined }> {
      const rows = await endpoints.events({ accountId, types, beforeId, limit: limit + 1 })
      return { events: rows.slice(0, limit).map(renderEvent), nextBeforeId: rows.length > limit ? rows[limit - 1]!.id : undefined }
    },

    /**
     * Queues `evt_…` again for the account's endpoints that take it: how many, and when
     * none, why; undefined when the account may not see it, or it is not of one of the
     * `types` the caller may read (its endpoints would hand the caller what it may not read).
     */
    async redeliver(accountId: number, eventId: string, types: readonly string[]): Promise<{ deliveries: number; reason?: string } | undefined> {
      const id = parseEventId(eventId)
      if (id === undefined) return undefined
      const queued = await endpoints.redeliver(accountId, id, types, clock.now())
      if (!queued) return undefined
      if (queued.deliveries > 0) {
        wake()
        return { deliveries: queued.deliveries }
      }
      return { deliveries: 0, reason: await whyNone(accountId, queued.type) }
    },

    /**
     * A new endpoint, with its secret (shown this once, and in an Idempotency-Key's
     * replays: with `completion`, the 201 body is stored in the insert's transaction and
     * the secret beside it, sealed); EndpointLimitReached when the account has as many as it may.
     */
    async create(accountId: number, { url, enabledEvents, description = '' }: NewWebhookEndpoint, completion?: SealingCompletion): Promise<WebhookEndpoint> {
      // Refused before the URL's host is looked up (outbound work for a name the caller
      // chose); the insert counts again under its lock, for creates racing this one.
      if ((await endpoints.endpoints(accountId)).length >= maxEndpoints) throw new EndpointLimitReached(maxEndpoints)
      const secret = newSecret()
      const endpoint = await endpoints.insertEndpoint(
        { accountId, url: await checked(url), description, enabledEvents: eventsList(enabledEvents), secret: secrets.seal(secret) },
        clock.now(),
        maxEndpoints,
        completion && { completion, body: (stored) => view(stored), sealedSecret: completion.seal(secret) },
      )
      if (!endpoint) throw new EndpointLimitReached(maxEndpoints)
      return view(endpoint, secret)
    },

    async list(accountId: number): Promise<WebhookEndpoint[]> {
      return (await endpoints.endpoints(accountId)).map((endpoint) => view(endpoint))
    },

    async get(accountId: number, id: number): Promise<WebhookEndpoint | undefined> {
      const endpoint = await endpoints.endpoint(accountId, id)
      return endpoint && view(endpoint)
    },

    /** `authorise` is shown the endpoint before its URL is looked up (`authorised`), and again if it changes meanwhile (`writeOver`). */
    async update(accountId: number, id: number, { url, enabledEvents, description, enabled }: WebhookEndpointPatch, authorise: (current: WebhookEndpoint) => void = () => {}): Promise<WebhookEndpoint | undefined> {
      const current = await authorised(accountId, id, authorise)
      if (!current) return undefined
      const changes: EndpointChanges = {
        ...(url === undefined ? {} : { url: await checked(url) }),
        ...(enabledEvents === undefined ? {} : { enabledEvents: eventsList(enabledEvents) }),
        ...(description === undefined ? {} : { description }),
        ...(enabled === undefined ? {} : { disabledAt: enabled ? null : clock.now() }),
      }
      const changed = await writeOver(accountId, id, current, authorise, (onlyIf) => endpoints.updateEndpoint(accountId, id, changes, onlyIf))
      return changed && view(changed)
    },

    /** `authorise` as update's (a deletion hands nothing out: it is checked, not compared and set). */
    async delete(accountId: number, id: number, authorise: (current: WebhookEndpoint) => void = () => {}): Promise<boolean> {
      if (!(await authorised(accountId, id, authorise))) return false
      const deleted = await endpoints.deleteEndpoint(accountId, id)
      if (deleted) endpointChanged(id)
      return deleted
    },

    /**
     * A new signing secret (shown this once); the old one keeps signing beside it for
     * `graceS` seconds. `authorise` as update's: the secret lets its holder sign what the
     * endpoint's receiver trusts.
     */
    async rotateSecret(accountId: number, id: number, graceS = DEFAULT_SECRET_GRACE_S, authorise: (current: WebhookEndpoint) => void = () => {}): Promise<WebhookEndpoint | undefined> {
      const current = await authorised(accountId, id, authorise)
      if (!current) return undefined
      const secret = newSecret()
      const rotated = await writeOver(accountId, id, current, authorise, (onlyIf) => endpoints.rotateSecret(accountId, id, secrets.seal(secret), clock.now() + graceS * 1000, onlyIf))
      return rotated && view(rotated, secret)
    },

    /** Queues a test event for this endpoint alone, whatever it subscribes to. */
    async test(accountId: number, id: number): Promise<Event | undefined> {
      const endpoint = await endpoints.endpoint(accountId, id)
      if (!endpoint) return undefined
      if (endpoint.disabledAt !== null) throw new EndpointDisabled(id)
      const event = await endpoints.insertTestEvent(endpoint, TEST_EVENT, JSON.stringify(view(endpoint)), clock.now())
      wake()
      return renderEvent(event)
    },

    /** The endpoint's latest attempts, newest first. */
    async deliveries(accountId: number, id: number): Promise<DeliveryAttempt[] | undefined> {
      const endpoint = await endpoints.endpoint(accountId, id)
      if (!endpoint) return undefined
      const seen = new Set<number>()
      // Newest first: the first of each delivery is its latest.
      return (await endpoints.attempts(endpoint.id, ATTEMPTS_SHOWN)).map((attempt) => {
        const latest = !seen.has(attempt.deliveryId)
        seen.add(attempt.deliveryId)
        return attemptView(attempt, latest)
      })
    },
  }
}

export type WebhookAdmin = ReturnType<typeof createWebhookAdmin>
