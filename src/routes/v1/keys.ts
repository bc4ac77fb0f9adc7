// The admin API: keys managing keys (scopes keys:read, keys:write; routes/v1/scopes.ts),
// on the same service layer as `petstore keys` (api-keys/key-admin.ts). The first key
// with keys:write is made with the command line.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { durationMs } from '../../api-keys/duration.js'
import { ActorLacksScope, ActorRefused, KeyAdminError, KeysLimitReached, KeyStateConflict, MAX_GRACE_MS, DEFAULT_GRACE_MS, type KeyAdmin } from '../../api-keys/key-admin.js'
import { scopesNamed } from '../../vocabulary/scopes.js'
import type { Clock } from '../../clock.js'
import { ApiError } from '../../errors.js'
import type { Idempotency } from '../../idempotency/idempotency.js'
import { fingerprintOf } from '../../idempotency/idempotency-key.js'
import { ApiKey, ApiKeyPatch, ApiKeyWithSecret, NewApiKey, UsageBucket } from '../../schemas/key.js'
import { idSchema } from '../../schemas/pet.js'
import { BODY_TOO_LARGE, errorResponse, header, idempotencyKeyReused, notJsonBody, optionalHeader, response, TOO_MANY_REQUESTS, UNAUTHORIZED } from '../../schemas/responses.js'
import { parametersWithDefaults, ref } from '../../schemas/shared.js'
import { insufficientScope } from '../../plugins/v1-guard.js'
import { refuseOtherMethods } from '../method-not-allowed.js'
import { decodeCursor, pageWithLink } from './cursor.js'
import { idempotencyKeyHeaders, listQuery, optionalBody } from './parameters.js'
import { HistoryQuery, historyOf } from './usage.js'
import type { UsageRecorder } from '../../usage/recorder.js'

export interface KeyRoutesOptions {
  keyAdmin: KeyAdmin
  usage: UsageRecorder
  idempotency: Idempotency
  clock: Clock
}

const KeyIdParams = Type.Object({ keyId: idSchema('Identifier of the key.') })
const RollBody = Type.Object(
  {
    grace: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_GRACE_MS / 1000, default: DEFAULT_GRACE_MS / 1000, description: 'Seconds the old key keeps working beside the new one: 0 stops it now; at most 7 days; default 24 hours.' }),
    ),
  },
  { additionalProperties: false },
)
const RevokeQuery = parametersWithDefaults(
  Type.Object({
    cascade: Type.Boolean({ default: false, description: 'true: also revoke every key this key made, and every key those made, however deep; and the keys it replaced by a roll, with what they made.' }),
  }),
)
const KeyListQuery = listQuery('keys')

const NO_SUCH_KEY = errorResponse('There is no key with this id in the caller\'s account (another account\'s key is answered the same way).', ['not_found'])
const BAD_KEY_ID = errorResponse('keyId is not a positive integer, or a query parameter is invalid.', ['invalid_parameter'])
const BEYOND = errorResponse('The calling key may not do this: the key acted on holds a scope the caller lacks (or, for a roll, outlives the caller), or the caller asks to give a scope it lacks or an expiry later than its own.', ['forbidden'])
const BEYOND_TARGET = errorResponse('The key acted on holds a scope the calling key lacks, or is the calling key\'s own or its maker\'s ban.', ['forbidden'])
const BAD_BODY = errorResponse('The body is not a JSON object of the documented fields, or a value is out of range.', ['invalid_body', 'invalid_field'])

/**
 * Plans and limits were fields of a key before accounts: a client still sending them
 * is told where they went, rather than only that the field is unknown.
 */
function refuseAccountFields(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
  const body = request.body
  const field = typeof body === 'object' && body !== null ? ['plan', 'limits'].find((name) => Object.hasOwn(body, name)) : undefined
  if (field === undefined) return done()
  const message = `${field} is the account's, shared by all its keys, and set by the operator (npx petstore accounts set-plan ID PLAN); a key is made in the caller's account, on its plan.`
  done(new ApiError('invalid_field', message, { details: [{ field, message }] }))
}

/** A refusal of the service layer as the ApiError it answers. */
function refused(error: unknown): never {
  // As the /v1 guard answers the key now (RFC 6750 §3): its revocation had not reached this process's cache.
  if (error instanceof ActorRefused) {
    throw new ApiError('unauthorized', error.message, { headers: { 'www-authenticate': 'Bearer realm="petstore", error="invalid_token", error_description="The API key is no longer active"' } })
  }
  // As the guard answers it now: the key's scopes were narrowed, and this process's cache had the old ones.
  if (error instanceof ActorLacksScope) throw insufficientScope(error.actor, error.lacking)
  if (error instanceof KeysLimitReached) throw new ApiError('key_limit_reached', error.message)
  if (error instanceof KeyStateConflict) throw new ApiError(error.code, error.message, { details: [{ field: error.field, message: error.message }] })
  if (error instanceof KeyAdminError) {
    const message = error.message
    throw new ApiError(error.beyond ? 'forbidden' : 'invalid_field', message, { details: [{ field: error.field, message }] })
  }
  throw error
}

export async function keyRoutes(app: FastifyInstance, { keyAdmin, usage, idempotency, clock }: KeyRoutesOptions) {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>()
  const noSuchKey = (keyId: number) => new ApiError('not_found', `There is no key with id ${keyId} in this account.`)

  v1.post(
    '/keys',
    {
      preValidation: refuseAccountFields,
      schema: {
        operationId: 'createKey',
        tags: ['keys'],
        summary: 'Make a key',
        description:
          'Makes an API key in the caller\'s account, sharing its plan, limits and data. The secret is in this response alone: the service keeps only its hash. The calling key can give no scope it lacks and no expiry later than its own (the new key expires with it by default). An account has at most 100 live keys (not revoked, not expired) for its keys to make another (the operator sets the number: `PETSTORE_MAX_KEYS`, and is not held to it); one more is refused with 409 `key_limit_reached`. A roll is counted only against twice that number (its old key is live through its grace). With an `Idempotency-Key`, a retry gets the same 201 again, secret included: for those 24 hours the secret is kept with the key\'s record, sealed with the main key (`PETSTORE_SECRET_KEY`), never in the clear. A replay goes only to a calling key that could make that key now: one whose scopes were narrowed, or expiry brought forward, since is answered 403 `forbidden`.',
        headers: idempotencyKeyHeaders({ replays: 'the first 201 (the secret included)', doesNot: 'makes no second key' }),
        body: ref(NewApiKey),
        response: {
          201: response('The key, with its secret.', ref(ApiKeyWithSecret), { Location: header('`/v1/keys/{id}`: where the key can be read.') }),
          400: BAD_BODY,
          401: UNAUTHORIZED,
          403: BEYOND,
          409: errorResponse('The account has as many live keys as its keys may make (100 unless the operator set another number; the message says how many): `key_limit_reached`; or a request with this Idempotency-Key is still running: `idempotency_key_in_use`, retry after `Retry-After` seconds.', ['key_limit_reached', 'idempotency_key_in_use'], {
            'Retry-After': optionalHeader('Seconds to wait before retrying.', Type.Integer()),
          }),
          413: BODY_TOO_LARGE,
          415: notJsonBody(),
          422: idempotencyKeyReused(),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const body = request.body
      // Its range (more than 0, at most a year, not beyond the caller's) is the key service's to judge.
      const expiresInMs = body.expiresIn === undefined ? undefined : durationMs(body.expiresIn)
      if (body.expiresIn !== undefined && expiresInMs === undefined) {
        throw new ApiError('invalid_field', 'expiresIn must be seconds (3600) or a duration such as "30d", "12h", "30m" or "90s", more than 0.', { details: [{ field: 'expiresIn', message: 'not a duration' }] })
      }
      const input = {
        ...(body.name === undefined ? {} : { name: body.name }),
        // Presets (all, read_only) expand as on the command line; [] is a key with no scope, as PATCH makes one.
        ...(body.scopes === undefined ? {} : { scopes: scopesNamed(body.scopes) }),
        ...(expiresInMs === undefined ? {} : { expiresInMs }),
      }
      const answer = await idempotency
        .run(request, {
          // The calling key is part of the request: a replay hands out the secret, which another
          // key of the account (with fewer scopes, say) must not get by sending the same body.
          fingerprint: () => fingerprintOf('createKey', { name: body.name, scopes: body.scopes && [...body.scopes].sort(), expiresIn: body.expiresIn, by: request.apiKey!.id }),
          write: (completion) => keyAdmin.create(input, request.apiKey!, completion),
        })
        .catch(refused)
      if (answer.replayed) {
        // Its secret goes to the caller as it is now: one whose scopes were narrowed since gets none beyond them.
        await keyAdmin.replayableBy(request.apiKey!, (answer.body as { apiKey: ApiKey }).apiKey).catch(refused)
        reply.header('idempotent-replayed', 'true')
      }
      // A replay's secret was kept sealed beside the body (a record from before it was kept has none).
      const created = answer.replayed
        ? { ...(answer.secret === undefined ? {} : { key: answer.secret }), ...(answer.body as { apiKey: ApiKey }) }
        : { key: answer.result.secret, apiKey: answer.result.key }
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
        description: 'The keys of the caller\'s account, in ascending id order, never a secret; `Link: rel="next"` when there are more.',
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
      const page = await keyAdmin.page(cursor === undefined ? 0 : decodeCursor(cursor), limit + 1, request.apiKey!)
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
    async (request) => (await keyAdmin.get(request.params.keyId, request.apiKey!)) ?? Promise.reject(noSuchKey(request.params.keyId)),
  )

  v1.patch(
    '/keys/:keyId',
    {
      preValidation: refuseAccountFields,
      schema: {
        operationId: 'updateKey',
        tags: ['keys'],
        summary: 'Change a key',
        description:
          'Changes the fields given (a JSON Merge Patch, RFC 7396, sent as `application/merge-patch+json` or `application/json`): name, scopes, and `enabled` to disable or enable the key. Running instances apply it within 5 seconds. The calling key changes only keys of its account with no scope beyond its own, and gives no scope it lacks; a calling key that expires neither adds scopes to nor enables a key that outlives it.',
        consumes: ['application/merge-patch+json', 'application/json'],
        params: KeyIdParams,
        body: ref(ApiKeyPatch),
        response: {
          200: response('The key as changed.', ref(ApiKey)),
          400: BAD_BODY,
          401: UNAUTHORIZED,
          403: BEYOND,
          404: NO_SUCH_KEY,
          409: errorResponse('The key is revoked: it can no longer be changed.', ['key_revoked']),
          413: BODY_TOO_LARGE,
          415: notJsonBody(true),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request) => {
      const { scopes, ...rest } = request.body
      // Presets expand as on creation.
      const changes = { ...rest, ...(scopes === undefined ? {} : { scopes: scopesNamed(scopes) }) }
      const changed = await keyAdmin.update(request.params.keyId, changes, request.apiKey!).catch(refused)
      return changed ?? Promise.reject(noSuchKey(request.params.keyId))
    },
  )

  v1.post(
    '/keys/:keyId/roll',
    {
      ...optionalBody,
      schema: {
        operationId: 'rollKey',
        tags: ['keys'],
        summary: 'Roll a key',
        description:
          'Makes a new key in the same account with the same name, scopes and expiry (disabled if the old one is), shown in this response alone. Both see the account\'s data and share its limits; the old key keeps working for the grace period (default 24 hours; 0 stops it now), then answers 401. A key rolls only itself and the keys it made, however deep (the keys a cascading revoke of it reaches), as the roll hands it the new secret: any other is 403 `forbidden`. The operator rolls any key (`npx petstore keys roll ID`). The old key is live through its grace period, so a key rolls only while the account has fewer than twice the live keys its keys may make (`PETSTORE_MAX_KEYS`, those in a grace period included): else 409 `key_limit_reached`.',
        params: KeyIdParams,
        body: RollBody,
        response: {
          201: response('The new key, with its secret.', ref(ApiKeyWithSecret), { Location: header('`/v1/keys/{id}` of the new key.') }),
          400: BAD_BODY,
          401: UNAUTHORIZED,
          403: BEYOND,
          404: errorResponse('There is no such key in this account.', ['not_found']),
          409: errorResponse('The key is revoked, or was rolled already (roll the key that replaced it); or the account has twice `PETSTORE_MAX_KEYS` live keys, those in a roll\'s grace period included.', ['key_revoked', 'key_already_rolled', 'key_limit_reached']),
          415: errorResponse('A body was sent, not as application/json.', ['unsupported_media_type']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const grace = (request.body.grace ?? DEFAULT_GRACE_MS / 1000) * 1000
      const rolled = await keyAdmin.roll(request.params.keyId, grace, request.apiKey!).catch(refused)
      if (!rolled) throw noSuchKey(request.params.keyId)
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
        description:
          'Revokes the key for good (a key may revoke itself); running instances refuse it within 5 seconds. Revoking it again changes nothing. With `cascade=true`, every key it made, and every key those made, is revoked too, and so are the keys it replaced by a roll (still in their grace period) with what they made; a key it rolled itself into counts as its making (its holder was handed the secret): the `Petstore-Revoked` header lists the ids revoked now. A cascade that reaches a key holding a scope the calling key lacks is 403, and revokes nothing. A key being made by one of these while the revoke runs is revoked too, or refused.',
        params: KeyIdParams,
        querystring: RevokeQuery,
        response: {
          200: response('The key, revoked.', ref(ApiKey), { 'Petstore-Revoked': optionalHeader('The ids of the keys this request revoked, comma-separated (with `cascade=true`).') }),
          400: BAD_KEY_ID,
          401: UNAUTHORIZED,
          403: BEYOND_TARGET,
          404: NO_SUCH_KEY,
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request, reply) => {
      const result = await keyAdmin.revoke(request.params.keyId, request.apiKey!, request.query.cascade).catch(refused)
      if (!result) throw noSuchKey(request.params.keyId)
      if (request.query.cascade) reply.header('petstore-revoked', result.revoked.join(','))
      return result.key
    },
  )

  v1.post(
    '/keys/:keyId/unban',
    {
      schema: {
        operationId: 'unbanKey',
        tags: ['keys'],
        summary: 'Lift a ban',
        description:
          'Lifts the key\'s ban for repeated requests while rate limited (on every instance with Redis). Its account\'s rate-limit windows are kept. Lifting no ban changes nothing. A key cannot lift its own ban nor its maker\'s.',
        params: KeyIdParams,
        response: { 200: response('The key, no longer banned.', ref(ApiKey)), 400: BAD_KEY_ID, 401: UNAUTHORIZED, 403: BEYOND_TARGET, 404: NO_SUCH_KEY, 429: TOO_MANY_REQUESTS },
      },
    },
    async (request) => {
      const result = await keyAdmin.unban(request.params.keyId, request.apiKey!).catch(refused)
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
      const key = await keyAdmin.find(request.params.keyId, request.apiKey!)
      if (!key) throw noSuchKey(request.params.keyId)
      return historyOf(usage, { accountId: key.accountId, keyId: key.id }, request.query, clock.now())
    },
  )

  refuseOtherMethods(app, '/keys', ['GET', 'POST'])
  refuseOtherMethods(app, '/keys/:keyId', ['GET', 'PATCH'])
  refuseOtherMethods(app, '/keys/:keyId/roll', ['POST'])
  refuseOtherMethods(app, '/keys/:keyId/revoke', ['POST'])
  refuseOtherMethods(app, '/keys/:keyId/unban', ['POST'])
  refuseOtherMethods(app, '/keys/:keyId/usage', ['GET'])
}
