// The admin API: keys managing keys (scopes keys:read, keys:write; routes/v1/scopes.ts),
// on the same service layer as `petstore keys` (api-keys/key-admin.ts). The first key
// with keys:write is made with the command line.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { KeyAdminError, MAX_GRACE_MS, DEFAULT_GRACE_MS, type KeyAdmin } from '../../api-keys/key-admin.js'
import type { Clock } from '../../clock.js'
import type { IdempotencyStore } from '../../db/idempotency-store.js'
import { ApiError } from '../../errors.js'
import { createIdempotency } from '../../idempotency/idempotency.js'
import { fingerprintOf } from '../../idempotency/idempotency-key.js'
import { ApiKey, ApiKeyPatch, ApiKeyWithSecret, NewApiKey, UsageBucket } from '../../schemas/key.js'
import { MAX_SAFE_ID } from '../../schemas/pet.js'
import { errorResponse, header, optionalHeader, response, TOO_MANY_REQUESTS, UNAUTHORIZED } from '../../schemas/responses.js'
import { parametersWithDefaults, ref } from '../../schemas/shared.js'
import { refuseOtherMethods } from '../method-not-allowed.js'
import { decodeCursor, pageWithLink } from './cursor.js'
import { DEFAULT_LIMIT, idempotencyKeyHeaders, MAX_LIMIT, noBodyIsEmptyObject } from './parameters.js'
import { HistoryQuery, historyOf } from './usage.js'
import type { UsageRecorder } from '../../api-keys/usage-recorder.js'

export interface KeyRoutesOptions {
  keyAdmin: KeyAdmin
  usage: UsageRecorder
  idempotency: IdempotencyStore
  clock: Clock
}

const KeyIdParams = Type.Object({ keyId: Type.Integer({ minimum: 1, maximum: MAX_SAFE_ID, format: 'int64', description: 'Identifier of the key.' }) })
const RollBody = Type.Object(
  {
    grace: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_GRACE_MS / 1000, default: DEFAULT_GRACE_MS / 1000, description: 'Seconds the old key keeps working beside the new one: 0 stops it now; at most 7 days; default 24 hours.' }),
    ),
  },
  { additionalProperties: false },
)
const KeyListQuery = parametersWithDefaults(
  Type.Object({
    limit: Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: 'Maximum number of keys to return.' }),
    cursor: Type.Optional(Type.String({ description: 'Where the page starts: an opaque token from the `Link: rel="next"` header of the previous page.' })),
  }),
)

const NO_SUCH_KEY = errorResponse('There is no key with this id.', ['not_found'])
const BAD_KEY_ID = errorResponse('keyId is not a positive integer, or a query parameter is invalid.', ['invalid_parameter'])
const BEYOND = errorResponse('The calling key may not give what it asks for: scopes it lacks, a higher plan or higher limits than its own.', ['forbidden'])
const BAD_BODY = errorResponse('The body is not a JSON object of the documented fields, or a value is out of range.', ['invalid_body', 'invalid_field'])

/** A refusal of the service layer as the ApiError it answers. */
function refused(error: unknown): never {
  if (error instanceof KeyAdminError) {
    const message = error.message.replaceAll('--per-minute', 'limits.perMinute').replaceAll('--per-day', 'limits.perDay')
    throw new ApiError(error.beyond ? 'forbidden' : 'invalid_field', message, { details: [{ field: error.field, message }] })
  }
  throw error
}

export async function keyRoutes(app: FastifyInstance, { keyAdmin, usage, idempotency: records, clock }: KeyRoutesOptions) {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>()
  const idempotency = createIdempotency({ records, clock })
  const noSuchKey = (keyId: number) => new ApiError('not_found', `There is no key with id ${keyId}.`)

  v1.post(
    '/keys',
    {
      schema: {
        operationId: 'createKey',
        tags: ['keys'],
        summary: 'Make a key',
        description:
          'Makes an API key. The secret is in this response alone: the service keeps only its hash. The calling key can give no more scopes, no higher plan and no higher limits than its own. With an `Idempotency-Key`, a retry gets the same key again, without its secret (which is not stored anywhere).',
        headers: idempotencyKeyHeaders({ replays: 'the first 201 (without the secret)', doesNot: 'makes no second key' }),
        body: ref(NewApiKey),
        response: {
          201: response('The key, with its secret.', ref(ApiKeyWithSecret), { Location: header('`/v1/keys/{id}`: where the key can be read.') }),
          400: BAD_BODY,
          401: UNAUTHORIZED,
          403: BEYOND,
          409: errorResponse('A request with this Idempotency-Key is still running.', ['idempotency_key_in_use'], {
            'Retry-After': optionalHeader('Seconds to wait before retrying.', Type.Integer()),
          }),
          413: errorResponse('The body is larger than 64 KiB.', ['payload_too_large']),
          415: errorResponse('The body is not sent as application/json.', ['unsupported_media_type']),
          422: errorResponse('This Idempotency-Key was already used with a different body.', ['idempotency_key_reused']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const body = request.body
      const input = {
        plan: body.plan,
        ...(body.name === undefined ? {} : { name: body.name }),
        ...(body.limits === undefined ? {} : { limits: body.limits }),
        ...(body.scopes === undefined ? {} : { scopes: body.scopes }),
        ...(body.expiresIn === undefined ? {} : { expiresInMs: body.expiresIn * 1000 }),
      }
      const answer = await idempotency
        .run(request, {
          fingerprint: () => fingerprintOf('createKey', { ...body, scopes: body.scopes && [...body.scopes].sort() }),
          write: (completion) => keyAdmin.create(input, request.apiKey!, completion),
        })
        .catch(refused)
      if (answer.replayed) reply.header('idempotent-replayed', 'true')
      const created = answer.replayed ? (answer.body as { apiKey: ApiKey }) : { key: answer.result.secret, apiKey: answer.result.key }
      return reply.code(201).header('location', `/v1/keys/${created.apiKey.id}`).send(created)
    },
  )

  v1.get(
    '/keys',
    {
      schema: {
        operationId: 'listKeys',
        tags: ['keys'],
        summary: 'List the keys',
        description: 'Every key of the service, in ascending id order, never a secret; `Link: rel="next"` when there are more.',
        querystring: KeyListQuery,
        response: {
          200: response('A page of keys.', Type.Array(ref(ApiKey)), { Link: optionalHeader('`</v1/keys?limit=…&cursor=…>; rel="next"` when more keys follow.') }),
          400: errorResponse('A query parameter is invalid.', ['invalid_parameter']),
          401: UNAUTHORIZED,
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const { limit, cursor } = request.query
      const page = await keyAdmin.page(cursor === undefined ? 0 : decodeCursor(cursor), limit + 1)
      const { items, link } = pageWithLink(page, { path: '/v1/keys', status: undefined, limit })
      if (link !== undefined) reply.header('link', link)
      return [...items]
    },
  )

  v1.get(
    '/keys/:keyId',
    {
      schema: {
        operationId: 'getKey',
        tags: ['keys'],
        summary: 'Read a key',
        description: 'One key, never its secret: its status (banned included), scopes, limits, expiry and last use.',
        params: KeyIdParams,
        response: { 200: response('The key.', ref(ApiKey)), 400: BAD_KEY_ID, 401: UNAUTHORIZED, 404: NO_SUCH_KEY, 429: TOO_MANY_REQUESTS },
      },
    },
    async (request) => (await keyAdmin.get(request.params.keyId)) ?? Promise.reject(noSuchKey(request.params.keyId)),
  )

  v1.patch(
    '/keys/:keyId',
    {
      schema: {
        operationId: 'updateKey',
        tags: ['keys'],
        summary: 'Change a key',
        description:
          'Changes the fields given (a JSON merge patch): name, plan, limits, scopes, and `enabled` to disable or enable the key. Running instances apply it within 5 seconds. The calling key can give no more than it has.',
        params: KeyIdParams,
        body: ref(ApiKeyPatch),
        response: {
          200: response('The key as changed.', ref(ApiKey)),
          400: BAD_BODY,
          401: UNAUTHORIZED,
          403: BEYOND,
          404: NO_SUCH_KEY,
          413: errorResponse('The body is larger than 64 KiB.', ['payload_too_large']),
          415: errorResponse('The body is not sent as application/json or application/merge-patch+json.', ['unsupported_media_type']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request) => {
      const changed = await keyAdmin.update(request.params.keyId, request.body, request.apiKey!).catch(refused)
      return changed ?? Promise.reject(noSuchKey(request.params.keyId))
    },
  )

  v1.post(
    '/keys/:keyId/roll',
    {
      preValidation: noBodyIsEmptyObject,
      schema: {
        operationId: 'rollKey',
        tags: ['keys'],
        summary: 'Roll a key',
        description:
          'Makes a new key with the same name, plan, limits, scopes and expiry, shown in this response alone. The old key keeps working for the grace period (default 24 hours; 0 stops it now), sharing one rate limit with the new one, then answers 401.',
        params: KeyIdParams,
        body: RollBody,
        response: {
          201: response('The new key, with its secret.', ref(ApiKeyWithSecret), { Location: header('`/v1/keys/{id}` of the new key.') }),
          400: BAD_BODY,
          401: UNAUTHORIZED,
          403: BEYOND,
          404: errorResponse('There is no such key, or it is revoked.', ['not_found']),
          415: errorResponse('A body was sent, not as application/json.', ['unsupported_media_type']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const grace = (request.body.grace ?? DEFAULT_GRACE_MS / 1000) * 1000
      const rolled = await keyAdmin.roll(request.params.keyId, grace, request.apiKey!).catch(refused)
      if (!rolled) throw new ApiError('not_found', `There is no key with id ${request.params.keyId} that can be rolled (it may be revoked).`)
      return reply.code(201).header('location', `/v1/keys/${rolled.key.id}`).send({ key: rolled.secret, apiKey: rolled.key })
    },
  )

  v1.post(
    '/keys/:keyId/revoke',
    {
      schema: {
        operationId: 'revokeKey',
        tags: ['keys'],
        summary: 'Revoke a key',
        description: 'Revokes the key for good; running instances refuse it within 5 seconds. Revoking it again changes nothing.',
        params: KeyIdParams,
        response: { 200: response('The key, revoked.', ref(ApiKey)), 400: BAD_KEY_ID, 401: UNAUTHORIZED, 404: NO_SUCH_KEY, 429: TOO_MANY_REQUESTS },
      },
    },
    async (request) => (await keyAdmin.revoke(request.params.keyId)) ?? Promise.reject(noSuchKey(request.params.keyId)),
  )

  v1.post(
    '/keys/:keyId/unban',
    {
      schema: {
        operationId: 'unbanKey',
        tags: ['keys'],
        summary: 'Lift a ban',
        description: 'Lifts the key\'s ban for repeated requests while rate limited (on every instance with Redis). Its rate-limit windows are kept. Lifting no ban changes nothing.',
        params: KeyIdParams,
        response: { 200: response('The key, no longer banned.', ref(ApiKey)), 400: BAD_KEY_ID, 401: UNAUTHORIZED, 404: NO_SUCH_KEY, 429: TOO_MANY_REQUESTS },
      },
    },
    async (request) => {
      const result = await keyAdmin.unban(request.params.keyId)
      if (!result) throw noSuchKey(request.params.keyId)
      return result.key
    },
  )

  v1.get(
    '/keys/:keyId/usage',
    {
      schema: {
        operationId: 'getKeyUsage',
        tags: ['keys'],
        summary: "Read a key's usage history",
        description: 'Requests of the key per hour or UTC day and outcome, as `GET /usage/history` gives a key its own.',
        params: KeyIdParams,
        querystring: HistoryQuery,
        response: {
          200: response('The buckets, oldest first; hours or days without requests are left out.', Type.Array(ref(UsageBucket))),
          400: BAD_KEY_ID,
          401: UNAUTHORIZED,
          404: NO_SUCH_KEY,
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request) => {
      if (!(await keyAdmin.get(request.params.keyId))) throw noSuchKey(request.params.keyId)
      return historyOf(usage, request.params.keyId, request.query, clock.now())
    },
  )

  refuseOtherMethods(app, '/keys', ['GET', 'POST'])
  refuseOtherMethods(app, '/keys/:keyId', ['GET', 'PATCH'])
  refuseOtherMethods(app, '/keys/:keyId/roll', ['POST'])
  refuseOtherMethods(app, '/keys/:keyId/revoke', ['POST'])
  refuseOtherMethods(app, '/keys/:keyId/unban', ['POST'])
  refuseOtherMethods(app, '/keys/:keyId/usage', ['GET'])
}
