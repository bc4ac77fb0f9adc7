// Schemas with an $id are shared: added once to Fastify (and so to the OpenAPI
// document's components) and referenced by routes with ref().
import { Type, type Static, type TObject, type TSchema } from 'typebox'
import { ErrorSchema } from './error.js'
import { NewPet, Pet, PetPatch } from './pet.js'
import { Category, CategoryPatch, NewCategory } from './category.js'
import { Inventory, NewOrder, Order } from './order.js'
import { Account, ApiKey, ApiKeyPatch, ApiKeyWithSecret, NewApiKey, Usage, UsageBucket } from './key.js'
import { DeliveryAttempt, EventSchema, NewWebhookEndpoint, WebhookEndpoint, WebhookEndpointPatch } from './webhook.js'

export const SHARED_SCHEMAS = [NewPet, PetPatch, Pet, Category, NewCategory, CategoryPatch, NewOrder, Order, Inventory, ApiKey, NewApiKey, ApiKeyPatch, ApiKeyWithSecret, Account, Usage, UsageBucket, EventSchema, WebhookEndpoint, NewWebhookEndpoint, WebhookEndpointPatch, DeliveryAttempt, ErrorSchema]

/** A `$ref` to a shared schema that keeps the schema's static type. */
export function ref<T extends TSchema>(schema: T) {
  const id = (schema as { $id?: string }).$id
  if (!id) throw new Error('ref() takes a shared schema, one with an $id')
  return Type.Unsafe<Static<T>>({ $ref: `${id}#` })
}

/**
 * Query or path parameters whose properties with a `default` are optional to the
 * caller (not in `required`, so the OpenAPI document says so) while the handler's
 * type keeps them: the validator fills the default in (Ajv `useDefaults`).
 */
export function parametersWithDefaults<T extends TObject>(schema: T): T {
  const properties = schema.properties as Record<string, { default?: unknown }>
  const required = (schema.required ?? []).filter((name) => properties[name]?.default === undefined)
  return { ...schema, required }
}
