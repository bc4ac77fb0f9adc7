// The scope each /v1 operation needs, in one table: a new operation must be given
// one (or null: any valid key) before the service starts. From it, each route gets
// its config.scope (checked by plugins/v1-guard.ts), its `security` requirement in
// the OpenAPI document, and its documented 403; and a write that makes events, its
// config.paced.
import type { FastifyInstance, RouteOptions } from 'fastify'
import type { Scope } from '../../vocabulary/scopes.js'
import { forbiddenOrInsufficientScope, INSUFFICIENT_SCOPE } from '../../schemas/responses.js'

export const OPERATION_SCOPES: Readonly<Record<string, Scope | null>> = {
  listPets: 'pets:read',
  getPet: 'pets:read',
  createPet: 'pets:write',
  updatePet: 'pets:write',
  deletePet: 'pets:write',
  getInventory: 'pets:read',
  listCategories: 'categories:read',
  getCategory: 'categories:read',
  createCategory: 'categories:write',
  updateCategory: 'categories:write',
  deleteCategory: 'categories:write',
  placeOrder: 'orders:write',
  listOrders: 'orders:read',
  getOrder: 'orders:read',
  completeOrder: 'orders:write',
  cancelOrder: 'orders:write',
  createKey: 'keys:write',
  listKeys: 'keys:read',
  getKey: 'keys:read',
  updateKey: 'keys:write',
  rollKey: 'keys:write',
  revokeKey: 'keys:write',
  unbanKey: 'keys:write',
  getKeyUsage: 'keys:read',
  getUsage: null,
  getAccount: null,
  getUsageHistory: 'usage:read',
  listEvents: 'events:read',
  redeliverEvent: 'webhooks:write',
  createWebhookEndpoint: 'webhooks:write',
  listWebhookEndpoints: 'webhooks:read',
  getWebhookEndpoint: 'webhooks:read',
  updateWebhookEndpoint: 'webhooks:write',
  deleteWebhookEndpoint: 'webhooks:write',
  rotateWebhookSecret: 'webhooks:write',
  testWebhookEndpoint: 'webhooks:write',
  listWebhookDeliveries: 'webhooks:read',
}

/** The writes that make events for the outbox: paced while the webhooks fall behind (webhooks/write-pacing.ts). */
const EVENT_WRITES: ReadonlySet<Scope> = new Set(['pets:write', 'categories:write', 'orders:write'])

/** The 403s this hook made: a route that comes again (a GET's HEAD) keeps its own. */
const SCOPED = new WeakSet<object>()

/** Registers the hook that applies the table to every route registered after it in `app`'s scope. */
export function applyOperationScopes(app: FastifyInstance) {
  app.addHook('onRoute', (route: RouteOptions) => {
    const schema = route.schema as ({ operationId?: string; security?: unknown; response?: Record<string, unknown> } | undefined)
    const operationId = schema?.operationId
    if (schema === undefined || operationId === undefined) return
    if (!Object.hasOwn(OPERATION_SCOPES, operationId)) throw new Error(`operation ${operationId} has no scope in routes/v1/scopes.ts`)
    const scope = OPERATION_SCOPES[operationId]
    if (scope === null || scope === undefined) return
    route.config = { ...route.config, scope, ...(EVENT_WRITES.has(scope) ? { paced: true } : {}) }
    schema.security = [{ apiKey: [scope] }]
    // A 403 of the route's own (`forbidden`) stays documented beside the scope's. (A GET's
    // HEAD route comes here with the same schema, its 403 already the scope's.)
    const own = schema.response?.[403] as { description: string } | undefined
    if (own === INSUFFICIENT_SCOPE || (own !== undefined && SCOPED.has(own))) return
    const forbidden = own ? forbiddenOrInsufficientScope(own) : INSUFFICIENT_SCOPE
    SCOPED.add(forbidden)
    schema.response = { ...schema.response, 403: forbidden }
  })
}
