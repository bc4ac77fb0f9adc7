// Every call the console makes to /v1, in one place. Pets, orders and the inventory go
// through the project's typed client (petstore/client); the operations it does not
// have yet are small typed fetches below, with the same Bearer header and the same
// error (PetstoreError from the API's Error body), each marked with the operation that
// should replace it once the client has it.
import { createClient, PetstoreError, type OperationId, type Pet, type PetPatch, type PetStatus, type NewPet, type Order, type OrderStatus, type Inventory, type PetstoreClient } from '../../src/client/index.js'
import type { ErrorBody } from '../../src/errors.js'
import type { Account, ApiKey, ApiKeyWithSecret, Usage, UsageBucket } from '../../src/schemas/key.js'
import type { DeliveryAttempt, NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch } from '../../src/schemas/webhook.js'
import type { Scope } from '../../src/vocabulary/scopes.js'
import { scopesNamedIn, type FetchOperation } from './scopes.js'

export { PetstoreError }
export { NEEDS } from './scopes.js'
export type { Account, ApiKey, DeliveryAttempt, Inventory, Order, OrderStatus, Pet, PetStatus, Usage, UsageBucket, WebhookEndpoint }

/** An event as GET /v1/events lists it. */
export interface PetstoreEvent {
  id: string
  type: string
  timestamp: string
  data: Record<string, unknown>
}

export interface Page<T> {
  items: T[]
  nextCursor: string | undefined
}

export interface Api {
  /** The key's own record and scopes; see ownKey. */
  ownKey(): Promise<{ key: ApiKey | undefined; scopes: Scope[] | undefined }>
  getAccount(): Promise<Account>
  getUsage(): Promise<Usage>
  /** The account's requests per hour by outcome; one key's with keyId. */
  getUsageHistory(from: Date, to: Date, keyId?: number): Promise<UsageBucket[]>

  listPets(options: { status?: PetStatus; cursor?: string; limit?: number }): Promise<Page<Pet>>
  createPet(pet: NewPet): Promise<Pet>
  /** The pet as it is now, with the ETag to send back in updatePet's If-Match. */
  readPet(id: number): Promise<{ pet: Pet; etag: string }>
  updatePet(id: number, changes: PetPatch, etag: string): Promise<Pet>
  deletePet(id: number): Promise<void>
  getInventory(): Promise<Inventory>

  listOrders(options: { status?: OrderStatus; cursor?: string }): Promise<Page<Order>>
  placeOrder(petId: number): Promise<Order>
  completeOrder(id: number): Promise<Order>
  cancelOrder(id: number): Promise<Order>

  listKeys(cursor?: string): Promise<Page<ApiKey>>
  createKey(key: { name?: string; scopes?: string[]; expiresIn?: string }): Promise<ApiKeyWithSecret>
  setKeyEnabled(id: number, enabled: boolean): Promise<ApiKey>
  rollKey(id: number, graceSeconds: number): Promise<ApiKeyWithSecret>
  revokeKey(id: number): Promise<ApiKey>

  listWebhookEndpoints(): Promise<Page<WebhookEndpoint>>
  createWebhookEndpoint(endpoint: NewWebhookEndpoint): Promise<WebhookEndpoint>
  updateWebhookEndpoint(id: number, changes: WebhookEndpointPatch): Promise<WebhookEndpoint>
  deleteWebhookEndpoint(id: number): Promise<void>
  rotateWebhookSecret(id: number): Promise<WebhookEndpoint>
  testWebhookEndpoint(id: number): Promise<PetstoreEvent>
  listWebhookDeliveries(id: number): Promise<Page<DeliveryAttempt>>
  listEvents(cursor?: string): Promise<Page<PetstoreEvent>>
  /** Queues the event again for every enabled endpoint subscribed to its type: how many. */
  redeliverEvent(eventId: string): Promise<{ deliveries: number }>
}

export function createApi(apiKey: string): Api {
  // The API of this page's own origin: the console is served by the server it manages.
  const BASE = `${location.origin}/v1`
  // One attempt: a person is waiting and can press the button again.
  const client: PetstoreClient = createClient({ baseUrl: BASE, apiKey, maxAttempts: 1, timeoutMs: 15_000 })

  /** One call to /v1 the client does not make yet: its JSON body (undefined for a 204) and headers, or a PetstoreError. */
  async function call<T>(operation: FetchOperation | 'getPet', method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ body: T; headers: Headers }> {
    const response = await fetch(`${BASE}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? null : JSON.stringify(body),
      // The key is the only credential: no cookie is sent or kept, no referrer leaks.
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    })
    const text = await response.text()
    const parsed: unknown = text === '' ? undefined : JSON.parse(text)
    if (!response.ok) {
      const error = (parsed ?? {}) as Partial<ErrorBody>
      throw new PetstoreError({
        // The client's error names its own operations; these are the API's operationIds too.
        operation: operation as unknown as OperationId,
        status: response.status,
        code: error.code ?? 'invalid_response',
        message: error.message ?? `HTTP ${response.status}`,
        details: error.details,
        requestId: response.headers.get('x-request-id') ?? undefined,
        attempts: 1,
      })
    }
    return { body: parsed as T, headers: response.headers }
  }

  const page = <T>({ body, headers }: { body: T[]; headers: Headers }): Page<T> => ({ items: body, nextCursor: cursorOf(headers.get('link')) })

  return {
    async ownKey() {
      // No operation tells a key its own scopes: GET /v1/keys (keys:read) lists them,
      // and the key is the one whose prefix starts the secret. Without keys:read, the
      // 403 names the scopes the key has in its message (plugins/v1-guard.ts).
      try {
        let cursor: string | undefined
        do {
          const keys = await this.listKeys(cursor)
          const key = keys.items.find((candidate) => apiKey.startsWith(candidate.prefix))
          if (key) return { key, scopes: key.scopes as Scope[] }
          cursor = keys.nextCursor
        } while (cursor !== undefined)
        return { key: undefined, scopes: undefined }
      } catch (error) {
        if (error instanceof PetstoreError && error.code === 'insufficient_scope') return { key: undefined, scopes: scopesNamedIn(error.message) }
        throw error
      }
    },
    // client: replace with getAccount when petstore/client has it
    getAccount: async () => (await call<Account>('getAccount', 'GET', '/account')).body,
    // client: replace with getUsage when petstore/client has it
    getUsage: async () => (await call<Usage>('getUsage', 'GET', '/usage')).body,
    // client: replace with getUsageHistory when petstore/client has it
    getUsageHistory: async (from, to, keyId) =>
      (await call<UsageBucket[]>('getUsageHistory', 'GET', `/usage/history?${new URLSearchParams({ granularity: 'hour', from: from.toISOString(), to: to.toISOString(), ...(keyId === undefined ? {} : { keyId: String(keyId) }) })}`)).body,

    async listPets({ status, cursor, limit }) {
      const { pets, nextCursor } = await client.listPets({ status, cursor, limit })
      return { items: pets, nextCursor }
    },
    createPet: (pet) => client.createPet(pet),
    async readPet(id) {
      // The client's getPet answers the pet without its ETag, and listPets carries
      // none: the edit form reads the pet here for the version it will send back.
      // client: replace with getPet when petstore/client answers the ETag with it
      const { body, headers } = await call<Pet>('getPet', 'GET', `/pets/${id}`)
      return { pet: body, etag: headers.get('etag') ?? '*' }
    },
    updatePet: async (id, changes, etag) => (await client.updatePet(id, changes, { ifMatch: etag })).pet,
    deletePet: (id) => client.deletePet(id),
    getInventory: () => client.getInventory(),

    async listOrders({ status, cursor }) {
      const { orders, nextCursor } = await client.listOrders({ status, cursor })
      return { items: orders, nextCursor }
    },
    placeOrder: (petId) => client.placeOrder(petId),
    completeOrder: (id) => client.completeOrder(id),
    cancelOrder: (id) => client.cancelOrder(id),

    // client: replace with listKeys when petstore/client has it
    listKeys: async (cursor) => page(await call<ApiKey[]>('listKeys', 'GET', `/keys?${new URLSearchParams({ limit: '100', ...(cursor ? { cursor } : {}) })}`)),
    // client: replace with createKey when petstore/client has it
    createKey: async (key) => (await call<ApiKeyWithSecret>('createKey', 'POST', '/keys', key, { 'idempotency-key': crypto.randomUUID() })).body,
    // client: replace with updateKey when petstore/client has it
    setKeyEnabled: async (id, enabled) => (await call<ApiKey>('updateKey', 'PATCH', `/keys/${id}`, { enabled })).body,
    // client: replace with rollKey when petstore/client has it
    rollKey: async (id, grace) => (await call<ApiKeyWithSecret>('rollKey', 'POST', `/keys/${id}/roll`, { grace })).body,
    // client: replace with revokeKey when petstore/client has it
    revokeKey: async (id) => (await call<ApiKey>('revokeKey', 'POST', `/keys/${id}/revoke`)).body,

    // client: replace with listWebhookEndpoints when petstore/client has it
    listWebhookEndpoints: async () => page(await call<WebhookEndpoint[]>('listWebhookEndpoints', 'GET', '/webhook-endpoints?limit=100')),
    // client: replace with createWebhookEndpoint when petstore/client has it
    createWebhookEndpoint: async (endpoint) => (await call<WebhookEndpoint>('createWebhookEndpoint', 'POST', '/webhook-endpoints', endpoint)).body,
    // client: replace with updateWebhookEndpoint when petstore/client has it
    updateWebhookEndpoint: async (id, changes) => (await call<WebhookEndpoint>('updateWebhookEndpoint', 'PATCH', `/webhook-endpoints/${id}`, changes)).body,
    // client: replace with deleteWebhookEndpoint when petstore/client has it
    deleteWebhookEndpoint: async (id) => void (await call<undefined>('deleteWebhookEndpoint', 'DELETE', `/webhook-endpoints/${id}`)),
    // client: replace with rotateWebhookSecret when petstore/client has it
    rotateWebhookSecret: async (id) => (await call<WebhookEndpoint>('rotateWebhookSecret', 'POST', `/webhook-endpoints/${id}/rotate-secret`, {})).body,
    // client: replace with testWebhookEndpoint when petstore/client has it
    testWebhookEndpoint: async (id) => (await call<PetstoreEvent>('testWebhookEndpoint', 'POST', `/webhook-endpoints/${id}/test`)).body,
    // client: replace with listWebhookDeliveries when petstore/client has it
    listWebhookDeliveries: async (id) => page(await call<DeliveryAttempt[]>('listWebhookDeliveries', 'GET', `/webhook-endpoints/${id}/deliveries?limit=100`)),
    // client: replace with listEvents when petstore/client has it
    listEvents: async (cursor) => page(await call<PetstoreEvent[]>('listEvents', 'GET', `/events?${new URLSearchParams({ limit: '20', ...(cursor ? { cursor } : {}) })}`)),
    // client: replace with redeliverEvent when petstore/client has it
    redeliverEvent: async (eventId) => (await call<{ deliveries: number }>('redeliverEvent', 'POST', `/events/${encodeURIComponent(eventId)}/redeliver`)).body,
  }
}

/** The cursor of `Link: <…?cursor=…>; rel="next"`, as the client reads it. */
function cursorOf(link: string | null): string | undefined {
  const next = link?.split(',').find((part) => /;\s*rel="?next"?/.test(part))
  const url = next?.match(/<([^>]+)>/)?.[1]
  return url === undefined ? undefined : (new URL(url, location.origin).searchParams.get('cursor') ?? undefined)
}
