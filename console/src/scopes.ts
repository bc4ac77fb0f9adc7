// Which scope each operation the console offers needs; the calling key's own scopes come
// with its account (GET /v1/account). No DOM here: test/console.test.ts imports it in Node.
import type { OperationId } from '../../src/client/index.js'
import type { Scope } from '../../src/vocabulary/scopes.js'

/**
 * The scope each operation the console offers needs (as routes/v1/scopes.ts says;
 * test/console.test.ts checks that they agree). null: any valid key.
 */
export const NEEDS = {
  listPets: 'pets:read',
  getPet: 'pets:read',
  createPet: 'pets:write',
  updatePet: 'pets:write',
  deletePet: 'pets:write',
  getInventory: 'pets:read',
  listCategories: 'categories:read',
  placeOrder: 'orders:write',
  listOrders: 'orders:read',
  getOrder: 'orders:read',
  completeOrder: 'orders:write',
  cancelOrder: 'orders:write',
  getAccount: null,
  getUsage: null,
  getUsageHistory: 'usage:read',
  listKeys: 'keys:read',
  createKey: 'keys:write',
  updateKey: 'keys:write',
  rollKey: 'keys:write',
  revokeKey: 'keys:write',
  listWebhookEndpoints: 'webhooks:read',
  createWebhookEndpoint: 'webhooks:write',
  updateWebhookEndpoint: 'webhooks:write',
  deleteWebhookEndpoint: 'webhooks:write',
  rotateWebhookSecret: 'webhooks:write',
  testWebhookEndpoint: 'webhooks:write',
  listWebhookDeliveries: 'webhooks:read',
  listEvents: 'events:read',
  redeliverEvent: 'webhooks:write',
} satisfies Partial<Record<OperationId, Scope | null>>
