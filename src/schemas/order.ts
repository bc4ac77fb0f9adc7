// Store orders and the inventory (decision D10): one schema per shape, for
// validation, serialization, the OpenAPI document and the handlers' types.
import { Type, type Static } from 'typebox'
import { idSchema } from './pet.js'

export const ORDER_STATUSES = ['placed', 'completed', 'cancelled'] as const
export type OrderStatus = (typeof ORDER_STATUSES)[number]

export const OrderStatusSchema = (description: string) => Type.Unsafe<OrderStatus>({ type: 'string', enum: [...ORDER_STATUSES], description })

const id = (description: string) => idSchema(description, { examples: [1] })
const timestamp = (description: string) =>
  Type.String({ format: 'date-time', description: `${description} An ISO 8601 date-time in UTC with milliseconds, e.g. \`2026-11-23T10:00:00.000Z\`.` })

export const NewOrder = Type.Object(
  { petId: id('The animal to reserve: it must be `available`.') },
  { $id: 'NewOrder', additionalProperties: false, description: 'A reservation to place. Unknown fields are refused, and values are never coerced.' },
)
export type NewOrder = Static<typeof NewOrder>

export const Order = Type.Object(
  {
    id: id('Unique identifier of the order, assigned by the service: positive and increasing.'),
    petId: id('The animal reserved.'),
    status: OrderStatusSchema(
      '`placed`: the animal is reserved (`pending`); `completed`: adopted (the animal is `sold`); `cancelled`: the reservation was given up (the animal is `available` again).',
    ),
    placedAt: timestamp('When the order was placed.'),
    closedAt: Type.Optional(timestamp('When the order was completed or cancelled; absent while it is `placed`.')),
  },
  { $id: 'Order', additionalProperties: false, description: 'The reservation of one animal by an account: any key of that account can see or change it (with the scopes for it); no other account can.' },
)
export type Order = Static<typeof Order>

const count = (status: string) => Type.Integer({ minimum: 0, description: `How many animals are \`${status}\`.` })

export const Inventory = Type.Object(
  { available: count('available'), pending: count('pending'), sold: count('sold') },
  { $id: 'Inventory', additionalProperties: false, description: 'The exact number of animals in each status, as of this request.' },
)
export type Inventory = Static<typeof Inventory>
