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
  { operationId: 'placeOrder', method: 'POST', path: '/v1/store/orders', example: '/v1/store/orders', body: { petId: 1 } },
  { operationId: 'listOrders', method: 'GET', path: '/v1/store/orders', example: '/v1/store/orders' },
  { operationId: 'getOrder', method: 'GET', path: '/v1/store/orders/{orderId}', example: '/v1/store/orders/1' },
  { operationId: 'completeOrder', method: 'POST', path: '/v1/store/orders/{orderId}/complete', example: '/v1/store/orders/1/complete' },
  { operationId: 'cancelOrder', method: 'POST', path: '/v1/store/orders/{orderId}/cancel', example: '/v1/store/orders/1/cancel' },
  { operationId: 'getInventory', method: 'GET', path: '/v1/store/inventory', example: '/v1/store/inventory' },
]
