// Every call the console makes to /v1, in one place, through the project's typed client
// (petstore/client): the console can do nothing the client and the API do not allow.
import { createClient, PetstoreError, type Category, type Pet, type PetPatch, type PetStatus, type NewPet, type Order, type OrderStatus, type Inventory, type PetstoreClient } from '../../src/client/index.js'
import type { Account, ApiKey, ApiKeyWithSecret, Usage, UsageBucket } from '../../src/schemas/key.js'
import type { DeliveryAttempt, NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch, WebhookEvent } from '../../src/schemas/webhook.js'
import type { Scope } from '../../src/vocabulary/scopes.js'

export { PetstoreError }
export { NEEDS } from './scopes.js'
export type { Account, ApiKey, Category, DeliveryAttempt, Inventory, Order, OrderStatus, Pet, PetStatus, Usage, UsageBucket, WebhookEndpoint }

/** An event as GET /v1/events lists it. */
export type PetstoreEvent = WebhookEvent

export interface Page<T> {
  items: T[]
  nextCursor: string | undefined
}

/** The pets table's filters; a cursor is bound to the filters it was made with. */
export interface PetFilters {
  status?: PetStatus
  categoryId?: number
  /** Part of the name: 3 to 100 characters. */
  q?: string
}

export interface Api {
  /** The account, and the calling key with its scopes (`callingKey`). */
  getAccount(): Promise<Account>
  getUsage(): Promise<Usage>
  /** The account's requests per hour by outcome; one key's with keyId. */
  getUsageHistory(from: Date, to: Date, keyId?: number): Promise<UsageBucket[]>

  listPets(options: PetFilters & { cursor?: string; limit?: number }): Promise<Page<Pet>>
  /** Every category, for the filter and the forms. */
  listCategories(): Promise<Category[]>
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

  const pageOf = <T>({ items, nextCursor }: { items: T[]; nextCursor: string | undefined }): Page<T> => ({ items, nextCursor })

  let categories: Promise<Category[]> | undefined
  const readAllCategories = async () => {
    const all: Category[] = []
    for await (const category of client.allCategories({ limit: 100 })) all.push(category)
    return all
  }

  return {
    getAccount: () => client.getAccount(),
    getUsage: () => client.getUsage(),
    getUsageHistory: (from, to, keyId) => client.getUsageHistory({ granularity: 'hour', from: from.toISOString(), to: to.toISOString(), ...(keyId === undefined ? {} : { keyId }) }),

    async listPets({ status, categoryId, q, cursor, limit }) {
      const { pets, nextCursor } = await client.listPets({ status, categoryId, q, cursor, limit })
      return { items: pets, nextCursor }
    },
    // Read once a session, not at each visit of the Pets page: categories are shared by
    // every account, so another tenant's many would otherwise spend this one's rate limit
    // on every visit. One made since shows as its id until the page is reloaded.
    listCategories() {
      categories ??= readAllCategories().catch((error: unknown) => {
        categories = undefined
        throw error
      })
      return categories
    },
    createPet: (pet) => client.createPet(pet),
    async readPet(id) {
      // GET /pets?ids= answers the pet with its ETag (Pet-ETags): the version the form sends back.
      const { pets, etags } = await client.listPets({ ids: [id] })
      const pet = pets[0]
      const etag = etags?.[id]
      if (pet === undefined || etag === undefined) throw new Error(`Pet ${id} is no longer there: someone deleted it.`)
      return { pet, etag }
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
