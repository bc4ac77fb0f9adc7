// The /v1 operations, a row each. A test that asserts something of every operation
// (401 without a key, no deprecation headers but on getPet, …) loops over this table,
// so a new operation is added here once and every such test covers it.
export interface V1Operation {
  operationId: string
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE'
  /** The path as the OpenAPI document names it, with /v1 in front. */
  path: string
  /** A request path to send: path parameters filled in with 1 (it may name nothing: a 404 is an answer too). */
  example: string
  /** A valid JSON body, for operations that take one. */
  body?: unknown
  deprecated?: true
}

export const V1_OPERATIONS: readonly V1Operation[] = [
  { operationId: 'listPets', method: 'GET', path: '/v1/pets', example: '/v1/pets' },
  { operationId: 'createPet', method: 'POST', path: '/v1/pets', example: '/v1/pets', body: { name: 'Rex', categoryId: 1 } },
  { operationId: 'getPet', method: 'GET', path: '/v1/pets/{petId}', example: '/v1/pets/1', deprecated: true },
  // A pet no test makes: these change or delete nothing a test relies on.
  { operationId: 'updatePet', method: 'PATCH', path: '/v1/pets/{petId}', example: '/v1/pets/987654321', body: { name: 'Rex' } },
  { operationId: 'deletePet', method: 'DELETE', path: '/v1/pets/{petId}', example: '/v1/pets/987654321' },
  { operationId: 'listCategories', method: 'GET', path: '/v1/categories', example: '/v1/categories' },
  { operationId: 'createCategory', method: 'POST', path: '/v1/categories', example: '/v1/categories', body: { name: 'Axolotls' } },
  { operationId: 'getCategory', method: 'GET', path: '/v1/categories/{categoryId}', example: '/v1/categories/1' },
  // A category no test makes: nothing changes.
  { operationId: 'updateCategory', method: 'PATCH', path: '/v1/categories/{categoryId}', example: '/v1/categories/987654321', body: { name: 'Renamed' } },
  { operationId: 'deleteCategory', method: 'DELETE', path: '/v1/categories/{categoryId}', example: '/v1/categories/987654321' },
  { operationId: 'placeOrder', method: 'POST', path: '/v1/store/orders', example: '/v1/store/orders', body: { petId: 1 } },
  { operationId: 'listOrders', method: 'GET', path: '/v1/store/orders', example: '/v1/store/orders' },
  { operationId: 'getOrder', method: 'GET', path: '/v1/store/orders/{orderId}', example: '/v1/store/orders/1' },
  { operationId: 'completeOrder', method: 'POST', path: '/v1/store/orders/{orderId}/complete', example: '/v1/store/orders/1/complete' },
  { operationId: 'cancelOrder', method: 'POST', path: '/v1/store/orders/{orderId}/cancel', example: '/v1/store/orders/1/cancel' },
  { operationId: 'getInventory', method: 'GET', path: '/v1/store/inventory', example: '/v1/store/inventory' },
  // A key no test makes (a 404), or a key the test's own key lacks the scope for (a 403): nothing changes.
  { operationId: 'createKey', method: 'POST', path: '/v1/keys', example: '/v1/keys', body: {} },
  { operationId: 'listKeys', method: 'GET', path: '/v1/keys', example: '/v1/keys' },
  { operationId: 'getKey', method: 'GET', path: '/v1/keys/{keyId}', example: '/v1/keys/987654321' },
  { operationId: 'updateKey', method: 'PATCH', path: '/v1/keys/{keyId}', example: '/v1/keys/987654321', body: { name: 'Renamed' } },
  { operationId: 'rollKey', method: 'POST', path: '/v1/keys/{keyId}/roll', example: '/v1/keys/987654321/roll' },
  { operationId: 'revokeKey', method: 'POST', path: '/v1/keys/{keyId}/revoke', example: '/v1/keys/987654321/revoke' },
  { operationId: 'unbanKey', method: 'POST', path: '/v1/keys/{keyId}/unban', example: '/v1/keys/987654321/unban' },
  { operationId: 'getKeyUsage', method: 'GET', path: '/v1/keys/{keyId}/usage', example: '/v1/keys/987654321/usage' },
  { operationId: 'getUsage', method: 'GET', path: '/v1/usage', example: '/v1/usage' },
  { operationId: 'getAccount', method: 'GET', path: '/v1/account', example: '/v1/account' },
  { operationId: 'getUsageHistory', method: 'GET', path: '/v1/usage/history', example: '/v1/usage/history' },
  { operationId: 'listEvents', method: 'GET', path: '/v1/events', example: '/v1/events' },
  { operationId: 'redeliverEvent', method: 'POST', path: '/v1/events/{eventId}/redeliver', example: '/v1/events/evt_987654321/redeliver' },
  // A public address given as a literal: nothing to resolve (the tests have no DNS), nothing ever sent.
  { operationId: 'createWebhookEndpoint', method: 'POST', path: '/v1/webhook-endpoints', example: '/v1/webhook-endpoints', body: { url: 'https://93.184.215.14/hook', enabledEvents: ['*'] } },
  { operationId: 'listWebhookEndpoints', method: 'GET', path: '/v1/webhook-endpoints', example: '/v1/webhook-endpoints' },
  { operationId: 'getWebhookEndpoint', method: 'GET', path: '/v1/webhook-endpoints/{endpointId}', example: '/v1/webhook-endpoints/987654321' },
  { operationId: 'updateWebhookEndpoint', method: 'PATCH', path: '/v1/webhook-endpoints/{endpointId}', example: '/v1/webhook-endpoints/987654321', body: { description: 'x' } },
  { operationId: 'deleteWebhookEndpoint', method: 'DELETE', path: '/v1/webhook-endpoints/{endpointId}', example: '/v1/webhook-endpoints/987654321' },
  { operationId: 'rotateWebhookSecret', method: 'POST', path: '/v1/webhook-endpoints/{endpointId}/rotate-secret', example: '/v1/webhook-endpoints/987654321/rotate-secret' },
  { operationId: 'testWebhookEndpoint', method: 'POST', path: '/v1/webhook-endpoints/{endpointId}/test', example: '/v1/webhook-endpoints/987654321/test' },
  { operationId: 'listWebhookDeliveries', method: 'GET', path: '/v1/webhook-endpoints/{endpointId}/deliveries', example: '/v1/webhook-endpoints/987654321/deliveries' },
]
