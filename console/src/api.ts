// Every call the console makes to /v1, in one place, through the project's typed client
// (petstore/client): the console can do nothing the client and the API do not allow.
// The one fetch of its own reads a pet with its ETag (the client's getPet answers the
// pet alone), with the same Bearer header and the same PetstoreError.
import { createClient, PetstoreError, type OperationId, type Pet, type PetPatch, type PetStatus, type NewPet, type Order, type OrderStatus, type Inventory, type PetstoreClient } from '../../src/client/index.js'
import type { ErrorBody } from '../../src/errors.js'
import type { Account, ApiKey, ApiKeyWithSecret, Usage, UsageBucket } from '../../src/schemas/key.js'
import type { DeliveryAttempt, NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch, WebhookEvent } from '../../src/schemas/webhook.js'
import type { Scope } from '../../src/vocabulary/scopes.js'
import { scopesNamedIn } from './scopes.js'

export { PetstoreError }
export { NEEDS } from './scopes.js'
export type { Account, ApiKey, DeliveryAttempt, Inventory, Order, OrderStatus, Pet, PetStatus, Usage, UsageBucket, WebhookEndpoint }

/** An event as GET /v1/events lists it. */
export type PetstoreEvent = WebhookEvent

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
  createKey(key: { name?: string; scopes?: Scope[]; expiresIn?: string }): Promise<ApiKeyWithSecret>
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
  async function call<T>(operation: 'getPet', method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ body: T; headers: Headers }> {
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

  const pageOf = <T>({ items, nextCursor }: { items: T[]; nextCursor: string | undefined }): Page<T> => ({ items, nextCursor })

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
    getAccount: () => client.getAccount(),
    getUsage: () => client.getUsage(),
    getUsageHistory: (from, to, keyId) => client.getUsageHistory({ granularity: 'hour', from: from.toISOString(), to: to.toISOString(), ...(keyId === undefined ? {} : { keyId }) }),

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

    listKeys: async (cursor) => pageOf(await client.listKeys({ limit: 100, ...(cursor ? { cursor } : {}) })),
    // One attempt (maxAttempts: 1), so the client's Idempotency-Key only matters to a person pressing the button again.
    createKey: (key) => client.createKey(key),
    setKeyEnabled: (id, enabled) => client.updateKey(id, { enabled }),
    rollKey: (id, graceSeconds) => client.rollKey(id, { graceSeconds }),
    revokeKey: async (id) => (await client.revokeKey(id)).key,

    listWebhookEndpoints: async () => ({ items: await client.listWebhookEndpoints(), nextCursor: undefined }),
    createWebhookEndpoint: (endpoint) => client.createWebhookEndpoint(endpoint),
    updateWebhookEndpoint: (id, changes) => client.updateWebhookEndpoint(id, changes),
    deleteWebhookEndpoint: (id) => client.deleteWebhookEndpoint(id),
    rotateWebhookSecret: (id) => client.rotateWebhookSecret(id),
    testWebhookEndpoint: (id) => client.testWebhookEndpoint(id),
    listWebhookDeliveries: async (id) => ({ items: await client.listWebhookDeliveries(id), nextCursor: undefined }),
    listEvents: async (cursor) => pageOf(await client.listEvents({ limit: 20, ...(cursor ? { cursor } : {}) })),
    redeliverEvent: (eventId) => client.redeliverEvent(eventId),
  }
}
