// Schemas with an $id are shared: added once to Fastify (and so to the OpenAPI
// document's components) and referenced by routes with ref().
import { Type, type Static, type TSchema } from 'typebox'
import { ErrorSchema } from './error.js'
import { NewPet, Pet } from './pet.js'
import { Inventory, NewOrder, Order } from './order.js'

export const SHARED_SCHEMAS = [NewPet, Pet, NewOrder, Order, Inventory, ErrorSchema]

/** A `$ref` to a shared schema that keeps the schema's static type. */
export function ref<T extends TSchema>(schema: T) {
  const id = (schema as { $id?: string }).$id
  if (!id) throw new Error('ref() takes a shared schema, one with an $id')
  return Type.Unsafe<Static<T>>({ $ref: `${id}#` })
}
