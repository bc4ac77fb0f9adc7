// Request pieces more than one operation takes, defined once: the list query of a
// keyset-paginated collection, and the Idempotency-Key header of a create-like operation.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Type, type TSchema } from 'typebox'
import { MAX_IDEMPOTENCY_KEY_LENGTH } from '../../idempotency/idempotency-key.js'
import { parametersWithDefaults } from '../../schemas/shared.js'

export const DEFAULT_LIMIT = 20
export const MAX_LIMIT = 100

/** `limit` of a list operation: `items` names what is listed. */
export const limitParameter = (items: string) => Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: `Maximum number of ${items} to return.` })
const cursorParameter = () => Type.String({ description: 'Where the page starts: an opaque token from the `Link: rel="next"` header of the previous page.' })

/** `?limit=&cursor=` of a list operation, and `status=` when `status` (its status filter's schema) is given: `items` names what is listed. */
export function listQuery(items: string): ReturnType<typeof plainListQuery>
export function listQuery<S extends TSchema>(items: string, status: S): ReturnType<typeof filteredListQuery<S>>
export function listQuery<S extends TSchema>(items: string, status?: S) {
  return status === undefined ? plainListQuery(items) : filteredListQuery(items, status)
}

const plainListQuery = (items: string) => parametersWithDefaults(Type.Object({ limit: limitParameter(items), cursor: Type.Optional(cursorParameter()) }))
const filteredListQuery = <S extends TSchema>(items: string, status: S) =>
  parametersWithDefaults(Type.Object({ limit: limitParameter(items), status: Type.Optional(status), cursor: Type.Optional(cursorParameter()) }))

/** The Idempotency-Key header: what a replay answers (`replays`) and does not do again (`doesNot`); `more`, anything the operation adds. */
export function idempotencyKeyHeaders({ replays, doesNot, more = '' }: { replays: string; doesNot: string; more?: string }) {
  return Type.Object({
    'Idempotency-Key': Type.Optional(
      Type.String({
        description: `Makes a retry safe (IETF draft httpapi-idempotency-key-header): 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters, e.g. a UUID, bare or quoted. For 24 hours, the same key (per API key) with the same body answers ${replays} again, with \`Idempotent-Replayed: true\`, and ${doesNot}; with another body it answers 422; while the first request is still running, 409.${more}`,
      }),
    ),
  })
}

/** No body is the empty object, so the body schema's defaults apply (a JSON `null` is a body, and refused as any other that is not an object). */
function noBodyIsEmptyObject(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
  if (request.body === undefined) request.body = {}
  done()
}

/**
 * The route options of an operation whose JSON body is optional (roll a key, rotate a
 * secret): no body, or an empty one sent as application/json (as many clients send on
 * every POST), is `{}`; the document says the body is not required.
 */
export const optionalBody = { config: { optionalBody: true }, preValidation: noBodyIsEmptyObject } as const
