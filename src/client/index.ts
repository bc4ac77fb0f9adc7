// `petstore/client`: a typed client for the Pet Store API. Its types come from the
// server's own schemas and error catalog (type-only imports, erased at build), so
// at run time it needs nothing but `fetch`.
import type { Inventory, Order, OrderStatus } from '../schemas/order.js'
import type { Category, CategoryPatch, NewCategory } from '../schemas/category.js'
import type { Account, ApiKey, ApiKeyPatch, ApiKeyWithSecret, NewApiKey, Usage, UsageBucket } from '../schemas/key.js'
import type { DeliveryAttempt, NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch, WebhookEvent } from '../schemas/webhook.js'
import type { NewPet, Pet, PetPatch, PetSort, PetStatus } from '../schemas/pet.js'
import { normalizeBaseUrl } from './base-url.js'
import type { OperationId, RateLimitState } from './errors.js'
import { nextCursor } from './response-headers.js'
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js'
import { createTransport } from './transport.js'

export type { NewPet, Pet, PetPatch, PetSort, PetStatus } from '../schemas/pet.js'
export type { Category, CategoryPatch, NewCategory } from '../schemas/category.js'
export type { Account, ApiKey, ApiKeyPatch, ApiKeyWithSecret, NewApiKey, Usage, UsageBucket } from '../schemas/key.js'
export type { DeliveryAttempt, NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch, WebhookEvent } from '../schemas/webhook.js'
export type { Inventory, Order, OrderStatus } from '../schemas/order.js'
export type { ErrorBody, ErrorCode, ErrorDetail } from '../errors.js'
export { PetstoreError, PetstoreNetworkError, type OperationId, type PetstoreErrorCode, type RateLimitState } from './errors.js'
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js'

export interface ClientOptions extends Partial<RetryPolicy> {
  /**
   * The API's base URL, with or without the version segment:
   * `http://127.0.0.1:8080` and `https://api.petstore.example/v1` both work
   * (`/v1` is appended when missing; trailing slashes are dropped).
   */
  baseUrl: string
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string
  /** Milliseconds one request may take, the body included, before it counts as a network failure. Default 30,000. */
  timeoutMs?: number
  /** Default: the global `fetch`. */
  fetch?: typeof fetch
  /** How the client waits between attempts. Default: a timer. Tests pass one that moves a fake clock. */
  sleep?: (ms: number) => Promise<void>
  /** A number in [0, 1) for the backoff jitter. Default: Math.random. */
  random?: () => number
}

export interface ListPetsOptions {
  /** 1 to 100; the API's default is 20. */
  limit?: number
  /** Only pets with this status, or any of these (an empty list: none, and no request is sent). */
  status?: PetStatus | readonly PetStatus[]
  /** Only pets of this category, or of any of these (an empty list: none, and no request is sent). */
  categoryId?: number | readonly number[]
  /** Only pets whose name contains this text, case-insensitively: 3 to 100 characters. */
  q?: string
  /**
   * Only these pets (up to 100); the page's `etags` then holds each one's ETag. The way
   * to read a pet before changing it: `listPets({ ids: [id] })` answers the pet and, in
   * `etags[id]`, the version to send back as updatePet's `ifMatch`. An empty list: none,
   * and no request is sent.
   */
  ids?: readonly number[]
  /** `id` (the API's default), `-id` or `name`. */
  sort?: PetSort
  /** Where the page starts: a `nextCursor` of a previous page, with the same filters and sort. */
  cursor?: string
}

export interface PetPage {
  pets: Pet[]
  /** Pass it as `cursor` for the next page; undefined on the last page. */
  nextCursor: string | undefined
  /** With `ids`: each pet's ETag by id, for `ifMatch`. */
  etags: Record<number, string> | undefined
  rateLimit: RateLimitState | undefined
  requestId: string | undefined
}

export interface ListCategoriesOptions {
  /** 1 to 100; the API's default is 20. */
  limit?: number
  /** Where the page starts: a `nextCursor` of a previous page. */
  cursor?: string
}

export interface CategoryPage {
  categories: Category[]
  /** Pass it as `cursor` for the next page; undefined on the last page. */
  nextCursor: string | undefined
  rateLimit: RateLimitState | undefined
  requestId: string | undefined
}

export interface ListOrdersOptions {
  /** 1 to 100; the API's default is 20. */
  limit?: number
  status?: OrderStatus
  /** Where the page starts: a `nextCursor` of a previous page. */
  cursor?: string
}

export interface OrderPage {
  orders: Order[]
  /** Pass it as `cursor` for the next page; undefined on the last page. */
  nextCursor: string | undefined
  rateLimit: RateLimitState | undefined
  requestId: string | undefined
}

export interface PlaceOrderOptions {
  /**
   * Sent as `Idempotency-Key`, the same on every retry of this call, so that a
   * retry after a lost answer gets the first order instead of a 409
   * `pet_unavailable` (the pet is already reserved, by that very order).
   * Default: a fresh random UUID per call. `false` sends none; a lost answer is
   * then not retried, only refusals by the rate limit are.
   */
  idempotencyKey?: string | false
}

export interface ChangePetOptions {
  /**
   * Sent as `If-Match`: the pet's ETag as last read (listPets with `ids`, or updatePet), or `*`. The
   * change is made only if the pet is still that version, else PetstoreError
   * `precondition_failed` (412).
   */
  ifMatch?: string
}

/** A pet and its ETag, the version to send back in `ifMatch`. */
export interface PetVersion {
  pet: Pet
  etag: string | undefined
}

export interface PageOptions {
  /** 1 to 100; the API's default is 20. */
  limit?: number
  /** Where the page starts: a `nextCursor` of a previous page. */
  cursor?: string
}

/** A page of items and the cursor of the next one. */
export interface Page<T> {
  items: T[]
  /** Pass it as `cursor` for the next page; undefined on the last page. */
  nextCursor: string | undefined
  rateLimit: RateLimitState | undefined
  requestId: string | undefined
}

export interface UsageHistoryOptions {
  /** RFC 3339; rounded down to the hour or day. Default: 24 hours (hour) or 30 days (day) before `to`. */
  from?: string
  /** RFC 3339, exclusive; default now. */
  to?: string
  /** `hour` (the API's default) or `day`. */
  granularity?: 'hour' | 'day'
}

export interface ListEventsOptions extends PageOptions {
  /** Only events of this type. */
  type?: string
}

export interface CreateOptions {
  /**
   * Sent as `Idempotency-Key`, the same on every retry of this call, so that a retry
   * after a lost answer gets the first 201 (a key's or an endpoint's secret included)
   * instead of making a second one. Default: a fresh random UUID per call. `false`
   * sends none; a lost answer is then not retried, only refusals by the rate limit are.
   */
  idempotencyKey?: string | false
}

export type CreateKeyOptions = CreateOptions
export type CreatePetOptions = CreateOptions

/** The key management, usage, events and webhook operations: every one of the API's. */
export interface AccountOperations {
  /** Makes a key in the caller's account (`keys:write`); the secret is in this answer alone. */
  createKey(key?: NewApiKey, options?: CreateKeyOptions): Promise<ApiKeyWithSecret>
  listKeys(options?: PageOptions): Promise<Page<ApiKey>>
  getKey(id: number): Promise<ApiKey>
  updateKey(id: number, changes: ApiKeyPatch): Promise<ApiKey>
  /** A new key in the same account; the old one works `graceSeconds` more (the API's default: 24 hours). Not retried after a lost answer. */
  rollKey(id: number, options?: { graceSeconds?: number }): Promise<ApiKeyWithSecret>
  /** Revokes the key, and with `cascade` every key it made; `revoked` lists the ids. Not retried after a lost answer. */
  revokeKey(id: number, options?: { cascade?: boolean }): Promise<{ key: ApiKey; revoked: number[] }>
  unbanKey(id: number): Promise<ApiKey>
  getKeyUsage(id: number, options?: UsageHistoryOptions): Promise<UsageBucket[]>
  /** The rate-limit windows the caller's account shares. */
  getUsage(): Promise<Usage>
  getAccount(): Promise<Account>
  getUsageHistory(options?: UsageHistoryOptions & { keyId?: number }): Promise<UsageBucket[]>
  /** Events the caller's account may see, newest first. */
  listEvents(options?: ListEventsOptions): Promise<Page<WebhookEvent>>
  /** Queues the event again for the caller's subscribed endpoints; not retried after a lost answer. */
  redeliverEvent(eventId: string): Promise<{ deliveries: number }>
  /** The answer carries the signing secret, the only time it is shown (and again to a retry with the same Idempotency-Key). Retried like createPet. */
  createWebhookEndpoint(endpoint: NewWebhookEndpoint, options?: CreateOptions): Promise<WebhookEndpoint>
  listWebhookEndpoints(): Promise<WebhookEndpoint[]>
  getWebhookEndpoint(id: number): Promise<WebhookEndpoint>
  updateWebhookEndpoint(id: number, changes: WebhookEndpointPatch): Promise<WebhookEndpoint>
  deleteWebhookEndpoint(id: number): Promise<void>
  /** A new secret; the old one signs beside it `graceSeconds` more (default 24 hours). */
  rotateWebhookSecret(id: number, options?: { graceSeconds?: number }): Promise<WebhookEndpoint>
  /** Sends a test event to the endpoint now. */
  testWebhookEndpoint(id: number): Promise<WebhookEvent>
  listWebhookDeliveries(id: number): Promise<DeliveryAttempt[]>
}

export interface PetstoreClient extends AccountOperations {
  /** The normalized base URL, ending in /v1. */
  readonly baseUrl: string
  /** One page of pets, in ascending id order. */
  listPets(options?: ListPetsOptions): Promise<PetPage>
  /** Every pet matching, across all pages: `for await (const pet of client.allPets({ status: 'sold' }))`. */
  allPets(options?: ListPetsOptions): AsyncGenerator<Pet, void, undefined>
  createPet(pet: NewPet, options?: CreatePetOptions): Promise<Pet>
  /**
   * @deprecated The API removes GET /pets/{petId} on 5 December 2030: use
   * `listPets({ ids: [id] })`, which also answers the pet's ETag (`etags[id]`). The
   * client warns once per process when it is called.
   */
  getPet(id: number): Promise<Pet>
  /**
   * Sets the fields given and keeps the others (a JSON Merge Patch). Throws
   * `pet_in_order` (409) for a status change while an open order holds the pet, and
   * `precondition_failed` (412) when `ifMatch` names another version.
   *
   * Retried after a network failure or a 5xx like the reads (setting the same fields
   * twice changes nothing more), except with `ifMatch`: the first attempt may have
   * changed the pet, and the retry would then throw `precondition_failed` for a call
   * that worked.
   */
  updatePet(id: number, changes: PetPatch, options?: ChangePetOptions): Promise<PetVersion>
  /**
   * Deletes a pet that no open order holds (else `pet_in_order`, 409). Retried only
   * after a 429, as completeOrder: after a lost answer the pet may be gone, and the
   * retry would throw `not_found` for a call that worked.
   */
  deletePet(id: number, options?: ChangePetOptions): Promise<void>
  /**
   * Reserves an available pet (decision D10): the order is `placed` and the pet
   * `pending`. Throws PetstoreError `not_found` when there is no such pet, and
   * `pet_unavailable` (409) when it is `pending` or `sold`. Retried like createPet.
   */
  placeOrder(petId: number, options?: PlaceOrderOptions): Promise<Order>
  /** One of this key's orders; another key's order is `not_found`, as a missing one. */
  getOrder(id: number): Promise<Order>
  /** One page of this key's orders, in ascending id order. */
  listOrders(options?: ListOrdersOptions): Promise<OrderPage>
  /** Every order of this key matching, across all pages: `for await (const order of client.allOrders({ status: 'placed' }))`. */
  allOrders(options?: ListOrdersOptions): AsyncGenerator<Order, void, undefined>
  /**
   * Completes a `placed` order: the order is `completed`, the pet `sold`. Throws
   * `order_closed` (409) when the order is already completed or cancelled.
   *
   * Not retried after a network failure or a 5xx: the order may have been
   * completed, and a retry would then throw `order_closed` for a call that
   * worked. Only refusals by the rate limit (429, sent before anything runs) are
   * retried. After a PetstoreNetworkError, call getOrder to learn the outcome.
   */
  completeOrder(id: number): Promise<Order>
  /**
   * Cancels a `placed` order: the order is `cancelled`, the pet `available` again.
   * Throws `order_closed` (409) when the order is already completed or cancelled.
   * Retried as completeOrder is: only after a 429; after a PetstoreNetworkError,
   * call getOrder to learn the outcome.
   */
  cancelOrder(id: number): Promise<Order>
  /** The exact number of pets in each status. */
  getInventory(): Promise<Inventory>
  /** One page of categories, in ascending id order. */
  listCategories(options?: ListCategoriesOptions): Promise<CategoryPage>
  /** Every category, across all pages. */
  allCategories(options?: ListCategoriesOptions): AsyncGenerator<Category, void, undefined>
  getCategory(id: number): Promise<Category>
  /**
   * Adds a category. Throws `category_name_taken` (409) when another has the name, in
   * any case. Retried like createPet: a retry after a lost answer gets the first 201.
   */
  createCategory(category: NewCategory, options?: CreateOptions): Promise<Category>
  /** Sets the fields given (a JSON Merge Patch); retried like the reads. */
  updateCategory(id: number, changes: CategoryPatch): Promise<Category>
  /** Deletes a category no pet names (else `category_in_use`, 409). Retried only after a 429, as deletePet. */
  deleteCategory(id: number): Promise<void>
}

/** A client for one base URL and API key. Methods throw PetstoreError or PetstoreNetworkError. */
export function createClient(options: ClientOptions): PetstoreClient {
  const baseUrl = normalizeBaseUrl(options.baseUrl)
  const policy: RetryPolicy = {
    maxAttempts: options.maxAttempts ?? DEFAULT_RETRY_POLICY.maxAttempts,
    maxRetryAfterSeconds: options.maxRetryAfterSeconds ?? DEFAULT_RETRY_POLICY.maxRetryAfterSeconds,
    baseDelayMs: options.baseDelayMs ?? DEFAULT_RETRY_POLICY.baseDelayMs,
    maxDelayMs: options.maxDelayMs ?? DEFAULT_RETRY_POLICY.maxDelayMs,
  }
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new RangeError(`petstore client: maxAttempts must be an integer of at least 1, got ${policy.maxAttempts}`)
  }
  const send = createTransport({
    baseUrl,
    apiKey: options.apiKey,
    // Looked up per call, not captured, so that a fetch replaced later (by a test or an APM agent) is used.
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    random: options.random ?? Math.random,
    timeoutMs: options.timeoutMs ?? 30_000,
    policy,
  })

  async function listPets(options: ListPetsOptions = {}): Promise<PetPage> {
    knownOptions('listPets', options, LIST_PETS_OPTIONS)
    const { limit, status, categoryId, q, ids, sort, cursor } = options
    // Pets among none of these statuses, categories or ids: none, without asking.
    if ([status, categoryId, ids].some((list) => Array.isArray(list) && list.length === 0)) return { pets: [], nextCursor: undefined, etags: {}, rateLimit: undefined, requestId: undefined }
    const query = { limit, status: commaList(status), categoryId: commaList(categoryId), q, ids: commaList(ids), sort, cursor }
    const { body, headers, rateLimit, requestId } = await send({ operation: 'listPets', method: 'GET', path: `/pets${search(query)}`, repeatable: true })
    return { pets: body as Pet[], nextCursor: nextCursor(headers.get('link')), etags: petETags(headers.get('pet-etags')), rateLimit, requestId }
  }

  async function listCategories({ limit, cursor }: ListCategoriesOptions = {}): Promise<CategoryPage> {
    const { body, headers, rateLimit, requestId } = await send({ operation: 'listCategories', method: 'GET', path: `/categories${search({ limit, cursor })}`, repeatable: true })
    return { categories: body as Category[], nextCursor: nextCursor(headers.get('link')), rateLimit, requestId }
  }

  async function getCategory(id: number): Promise<Category> {
    return (await send({ operation: 'getCategory', method: 'GET', path: `/categories/${pathId(id)}`, repeatable: true })).body as Category
  }

  async function createCategory(category: NewCategory, { idempotencyKey }: CreateOptions = {}): Promise<Category> {
    return (await send({ operation: 'createCategory', method: 'POST', path: '/categories', body: category, ...idempotent(idempotencyKey) })).body as Category
  }

  async function updateCategory(id: number, changes: CategoryPatch): Promise<Category> {
    return (await send({ operation: 'updateCategory', method: 'PATCH', path: `/categories/${pathId(id)}`, body: changes, repeatable: true })).body as Category
  }

  async function deleteCategory(id: number): Promise<void> {
    await send({ operation: 'deleteCategory', method: 'DELETE', path: `/categories/${pathId(id)}`, repeatable: false })
  }

  async function createPet(pet: NewPet, { idempotencyKey }: CreatePetOptions = {}): Promise<Pet> {
    const { body } = await send({ operation: 'createPet', method: 'POST', path: '/pets', body: pet, ...idempotent(idempotencyKey) })
    return body as Pet
  }

  async function getPet(id: number): Promise<Pet> {
    const { body } = await send({ operation: 'getPet', method: 'GET', path: `/pets/${pathId(id)}`, repeatable: true })
    return body as Pet
  }

  async function updatePet(id: number, changes: PetPatch, { ifMatch }: ChangePetOptions = {}): Promise<PetVersion> {
    const { body, headers } = await send({
      operation: 'updatePet',
      method: 'PATCH',
      path: `/pets/${pathId(id)}`,
      body: changes,
      ...(ifMatch === undefined ? {} : { headers: { 'if-match': ifMatch } }),
      repeatable: ifMatch === undefined,
    })
    return { pet: body as Pet, etag: headers.get('etag') ?? undefined }
  }

  async function deletePet(id: number, { ifMatch }: ChangePetOptions = {}): Promise<void> {
    await send({ operation: 'deletePet', method: 'DELETE', path: `/pets/${pathId(id)}`, ...(ifMatch === undefined ? {} : { headers: { 'if-match': ifMatch } }), repeatable: false })
  }

  async function placeOrder(petId: number, { idempotencyKey }: PlaceOrderOptions = {}): Promise<Order> {
    const { body } = await send({ operation: 'placeOrder', method: 'POST', path: '/store/orders', body: { petId }, ...idempotent(idempotencyKey) })
    return body as Order
  }

  async function getOrder(id: number): Promise<Order> {
    const { body } = await send({ operation: 'getOrder', method: 'GET', path: `/store/orders/${pathId(id)}`, repeatable: true })
    return body as Order
  }

  async function listOrders({ limit, status, cursor }: ListOrdersOptions = {}): Promise<OrderPage> {
    const { body, headers, rateLimit, requestId } = await send({
      operation: 'listOrders',
      method: 'GET',
      path: `/store/orders${search({ limit, status, cursor })}`,
      repeatable: true,
    })
    return { orders: body as Order[], nextCursor: nextCursor(headers.get('link')), rateLimit, requestId }
  }

  // A transition is not repeatable: see completeOrder in PetstoreClient.
  async function closeOrder(operation: 'completeOrder' | 'cancelOrder', id: number): Promise<Order> {
    const action = operation === 'completeOrder' ? 'complete' : 'cancel'
    const { body } = await send({ operation, method: 'POST', path: `/store/orders/${pathId(id)}/${action}`, repeatable: false })
    return body as Order
  }

  async function getInventory(): Promise<Inventory> {
    const { body } = await send({ operation: 'getInventory', method: 'GET', path: '/store/inventory', repeatable: true })
    return body as Inventory
  }

  /** A GET answering a JSON value. */
  const read = async <T>(operation: OperationId, path: string): Promise<T> => (await send({ operation, method: 'GET', path, repeatable: true })).body as T
  /** Any other call; `repeatable`: whether sending it twice cannot do its work twice. */
  const call = async <T>(operation: OperationId, method: 'POST' | 'PATCH' | 'DELETE', path: string, body: unknown, repeatable: boolean): Promise<T> =>
    (await send({ operation, method, path, ...(body === undefined ? {} : { body }), repeatable })).body as T
  const page = async <T>(operation: OperationId, path: string, query: Record<string, string | number | undefined>): Promise<Page<T>> => {
    const { body, headers, rateLimit, requestId } = await send({ operation, method: 'GET', path: `${path}${search(query)}`, repeatable: true })
    return { items: body as T[], nextCursor: nextCursor(headers.get('link')), rateLimit, requestId }
  }
  const history = ({ from, to, granularity }: UsageHistoryOptions = {}) => ({ from, to, granularity })

  const accountOperations: AccountOperations = {
    createKey: async (key = {}, { idempotencyKey } = {}) =>
      (await send({ operation: 'createKey', method: 'POST', path: '/keys', body: key, ...idempotent(idempotencyKey) })).body as ApiKeyWithSecret,
    listKeys: ({ limit, cursor } = {}) => page('listKeys', '/keys', { limit, cursor }),
    getKey: (id) => read('getKey', `/keys/${pathId(id)}`),
    updateKey: (id, changes) => call('updateKey', 'PATCH', `/keys/${pathId(id)}`, changes, true),
    rollKey: (id, { graceSeconds } = {}) => call('rollKey', 'POST', `/keys/${pathId(id)}/roll`, graceSeconds === undefined ? {} : { grace: graceSeconds }, false),
    async revokeKey(id, { cascade } = {}) {
      const { body, headers } = await send({ operation: 'revokeKey', method: 'POST', path: `/keys/${pathId(id)}/revoke${search({ cascade: cascade ? 'true' : undefined })}`, repeatable: false })
      const revoked = (headers.get('petstore-revoked') ?? '').split(',').filter((item) => item !== '').map(Number)
      return { key: body as ApiKey, revoked: revoked.length > 0 ? revoked : [id] }
    },
    unbanKey: (id) => call('unbanKey', 'POST', `/keys/${pathId(id)}/unban`, undefined, true),
    getKeyUsage: (id, options) => read('getKeyUsage', `/keys/${pathId(id)}/usage${search(history(options))}`),
    getUsage: () => read('getUsage', '/usage'),
    getAccount: () => read('getAccount', '/account'),
    getUsageHistory: (options = {}) => read('getUsageHistory', `/usage/history${search({ ...history(options), keyId: options.keyId })}`),
    listEvents: ({ limit, type, cursor } = {}) => page('listEvents', '/events', { limit, type, cursor }),
    redeliverEvent: (eventId) => call('redeliverEvent', 'POST', `/events/${encodeURIComponent(eventId)}/redeliver`, undefined, false),
    createWebhookEndpoint: async (endpoint, { idempotencyKey } = {}) =>
      (await send({ operation: 'createWebhookEndpoint', method: 'POST', path: '/webhook-endpoints', body: endpoint, ...idempotent(idempotencyKey) })).body as WebhookEndpoint,
    listWebhookEndpoints: () => read('listWebhookEndpoints', '/webhook-endpoints'),
    getWebhookEndpoint: (id) => read('getWebhookEndpoint', `/webhook-endpoints/${pathId(id)}`),
    updateWebhookEndpoint: (id, changes) => call('updateWebhookEndpoint', 'PATCH', `/webhook-endpoints/${pathId(id)}`, changes, true),
    deleteWebhookEndpoint: async (id) => {
      await call('deleteWebhookEndpoint', 'DELETE', `/webhook-endpoints/${pathId(id)}`, undefined, false)
    },
    rotateWebhookSecret: (id, { graceSeconds } = {}) => call('rotateWebhookSecret', 'POST', `/webhook-endpoints/${pathId(id)}/rotate-secret`, graceSeconds === undefined ? {} : { grace: graceSeconds }, false),
    testWebhookEndpoint: (id) => call('testWebhookEndpoint', 'POST', `/webhook-endpoints/${pathId(id)}/test`, undefined, false),
    listWebhookDeliveries: (id) => read('listWebhookDeliveries', `/webhook-endpoints/${pathId(id)}/deliveries`),
  }

  return {
    ...accountOperations,
    baseUrl,
    listPets,
    allPets: (listOptions) => every(listPets, (page) => page.pets, listOptions ?? {}),
    createPet,
    getPet,
    updatePet,
    deletePet,
    placeOrder,
    getOrder,
    listOrders,
    allOrders: (listOptions) => every(listOrders, (page) => page.orders, listOptions ?? {}),
    completeOrder: (id) => closeOrder('completeOrder', id),
    cancelOrder: (id) => closeOrder('cancelOrder', id),
    getInventory,
    listCategories,
    allCategories: (listOptions) => every(listCategories, (page) => page.categories, listOptions ?? {}),
    getCategory,
    createCategory,
    updateCategory,
    deleteCategory,
  }
}

/** ListPetsOptions' names, every one (the compiler checks): what a JavaScript caller (or a variable, past TypeScript's excess-property check) may pass. */
const LIST_PETS_OPTIONS = Object.keys({ limit: true, status: true, categoryId: true, q: true, ids: true, sort: true, cursor: true } satisfies Record<keyof ListPetsOptions, true>)

/**
 * Refuses an option the operation does not take, as the API refuses an unknown query
 * parameter: a filter misspelt (`stauts`) would otherwise answer every pet.
 */
function knownOptions(operation: OperationId, options: object, known: readonly string[]): void {
  const unknown = Object.keys(options).find((name) => !known.includes(name))
  if (unknown !== undefined) throw new TypeError(`${operation}: unknown option "${unknown}"; it takes ${known.join(', ')}`)
}

/** A list parameter as the API takes it: comma-separated. */
function commaList(value: string | number | readonly (string | number)[] | undefined): string | number | undefined {
  return Array.isArray(value) ? value.join(',') : (value as string | number | undefined)
}

/** The `Pet-ETags` header (`4="…", 8="…"`) by id. */
function petETags(header: string | null): Record<number, string> | undefined {
  if (header === null) return undefined
  const etags: Record<number, string> = {}
  for (const pair of header.split(', ')) {
    const at = pair.indexOf('=')
    if (at > 0) etags[Number(pair.slice(0, at))] = pair.slice(at + 1)
  }
  return etags
}

/** `?limit=…&status=…&cursor=…` with the options given, in that order; empty when none is. */
function search(options: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(options)) if (value !== undefined) query.set(name, String(value))
  return query.size > 0 ? `?${query.toString()}` : ''
}

const pathId = (id: number) => encodeURIComponent(String(id))

/**
 * The Idempotency-Key of one call, generated before the first attempt so that every
 * retry carries the same; a POST that carries one may be sent again after a lost answer.
 */
function idempotent(idempotencyKey: string | false | undefined): { headers: Record<string, string>; repeatable: boolean } {
  const key = idempotencyKey === false ? undefined : (idempotencyKey ?? globalThis.crypto.randomUUID())
  return { headers: key === undefined ? {} : { 'idempotency-key': key }, repeatable: key !== undefined }
}

/** Every item of every page, following nextCursor from the options' cursor on. */
async function* every<Options extends { cursor?: string }, Page extends { nextCursor: string | undefined }, Item>(
  list: (options: Options) => Promise<Page>,
  items: (page: Page) => Item[],
  options: Options,
): AsyncGenerator<Item, void, undefined> {
  let cursor = options.cursor
  do {
    const page = await list({ ...options, cursor })
    yield* items(page)
    cursor = page.nextCursor
  } while (cursor !== undefined)
}
