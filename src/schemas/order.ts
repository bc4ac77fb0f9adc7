// Decision D10: store orders (adoption) and the inventory.
import { Type, type Static } from 'typebox'
import { MAX_SAFE_ID } from './pet.js'

export const ORDER_STATUSES = ['placed', 'completed', 'cancelled'] as const
export type OrderStatus = (typeof ORDER_STATUSES)[number]

const id = (description: string) => Type.Integer({ minimum: 1, maximum: MAX_SAFE_ID, format: 'int64', description, examples: [1] })

export const OrderStatusSchema = (options: { description?: string } = {}) =>
  Type.Unsafe<OrderStatus>({
    type: 'string',
    enum: [...ORDER_STATUSES],
    description: '`placed` (the pet is reserved: `pending`), `completed` (the pet is `sold`) or `cancelled` (the pet is `available` again).',
    ...options,
  })

export const NewOrder = Type.Object(
  { petId: id('The pet to reserve: it must be `available`.') },
  { $id: 'NewOrder', additionalProperties: false, description: 'A reservation of one available pet. Unknown fields are refused, and values are never coerced.' },
)
export type NewOrder = Static<typeof NewOrder>

export const Order = Type.Object(
  {
    id: id('Unique identifier, assigned by the service.'),
    petId: id('The reserved pet.'),
    status: OrderStatusSchema(),
    placedAt: Type.String({ format: 'date-time', description: 'When the order was placed (ISO 8601, UTC).' }),
    closedAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the order was completed or cancelled (ISO 8601, UTC); absent while it is `placed`.' })),
  },
  { $id: 'Order', additionalProperties: false, description: 'An adoption: the reservation of one pet by the API key that placed it.' },
)
export type Order = Static<typeof Order>

const count = (status: string) => Type.Integer({ minimum: 0, description: `Pets whose status is \`${status}\`.` })

export const Inventory = Type.Object(
  { available: count('available'), pending: count('pending'), sold: count('sold') },
  { $id: 'Inventory', additionalProperties: false, description: 'The exact number of pets in each status.' },
)
export type Inventory = Static<typeof Inventory>
