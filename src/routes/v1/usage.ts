// What a key can see of its account's use: the windows all its keys share as they
// stand (without counting the request that asks), and its history per hour or day and
// outcome, of the whole account or of one of its keys.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type, type Static } from 'typebox'
import type { UsageRecorder } from '../../usage/recorder.js'
import { usageHistory, UsageRangeError } from '../../usage/history.js'
import { windowsOf } from '../../usage/windows.js'
import { USAGE_KEPT_DAYS } from '../../vocabulary/usage.js'
import type { Clock } from '../../clock.js'
import { ApiError } from '../../errors.js'
import type { RateLimiter } from '../../rate-limit/limiter.js'
import type { KeyAdmin } from '../../api-keys/key-admin.js'
import type { UsageScope } from '../../db/usage-store.js'
import { idSchema } from '../../schemas/pet.js'
import { Usage, UsageBucket } from '../../schemas/key.js'
import { errorResponse, response, TOO_MANY_REQUESTS, UNAUTHORIZED } from '../../schemas/responses.js'
import { parametersWithDefaults, ref } from '../../schemas/shared.js'
import { insufficientScope } from '../../plugins/v1-guard.js'
import { refuseOtherMethods } from '../method-not-allowed.js'

export const HistoryQuery = parametersWithDefaults(
  Type.Object({
    from: Type.Optional(Type.String({ format: 'date-time', description: `Start (RFC 3339), rounded down to the hour or day; default: 24 hours (hour) or 30 days (day) before \`to\`. History is kept ${USAGE_KEPT_DAYS} days.` })),
    to: Type.Optional(Type.String({ format: 'date-time', description: 'End, exclusive (RFC 3339); default: now.' })),
    granularity: Type.Unsafe<'hour' | 'day'>({ type: 'string', enum: ['hour', 'day'], default: 'hour', description: 'One bucket per UTC hour or per UTC day.' }),
  }),
)
type HistoryQuery = Static<typeof HistoryQuery>

const AccountHistoryQuery = parametersWithDefaults(
  Type.Object({
    ...HistoryQuery.properties,
    keyId: Type.Optional(idSchema('One key of the account (another than the calling key needs `keys:read` as well, as `GET /v1/keys/{id}/usage`); absent: all its keys together.')),
  }),
)

/** The history the query asks for, from this instance's recorder; a range it cannot answer is a 400. */
export async function historyOf(usage: UsageRecorder, scope: UsageScope, query: HistoryQuery, now: number): Promise<UsageBucket[]> {
  const range = { granularity: query.granularity, from: query.from === undefined ? undefined : Date.parse(query.from), to: query.to === undefined ? undefined : Date.parse(query.to) }
  try {
    return await usageHistory(usage.history, scope, range, now)
  } catch (error) {
    if (error instanceof UsageRangeError) throw new ApiError('invalid_parameter', error.message, { details: [{ field: error.field, message: error.reason }] })
    throw error
  }
}

export interface UsageRoutesOptions {
  keyAdmin: KeyAdmin
  limiter: RateLimiter
  usage: UsageRecorder
  clock: Clock
}

export async function usageRoutes(app: FastifyInstance, { keyAdmin, limiter, usage, clock }: UsageRoutesOptions) {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>()

  v1.get(
    '/usage',
    {
      // Answered from the windows it reports: asking does not use them up.
      config: { uncounted: true },
      schema: {
        operationId: 'getUsage',
        tags: ['usage'],
        summary: 'Your rate-limit windows',
        description:
          'The windows of the caller\'s account as they stand (all its keys count in them together), and the calling key\'s ban, shaped as GitHub\'s `GET /rate_limit`. Any valid key may ask, and asking is not counted against the limits (nor refused by them), except by a ban: a banned key is answered 429 `key_banned` here too, its `Retry-After` saying when the ban ends, so that its flood costs no look at the windows. A request without a valid key is counted and refused as anywhere.',
        response: { 200: response('The windows.', ref(Usage)), 401: UNAUTHORIZED, 429: TOO_MANY_REQUESTS },
      },
    },
    async (request) => windowsOf(limiter, request.apiKey!, request.apiKey!.limits),
  )

  v1.get(
    '/usage/history',
    {
      schema: {
        operationId: 'getUsageHistory',
        tags: ['usage'],
        summary: 'Your account\'s usage history',
        description:
          `The requests of the caller's account (all its keys, or one with \`keyId\`) per UTC hour or day and outcome, for up to ${USAGE_KEPT_DAYS} days. Counts reach the store every few seconds (a crash may lose the last few seconds of them); this instance's latest counts are included.`,
        querystring: AccountHistoryQuery,
        response: {
          200: response('The buckets, oldest first; hours or days without requests are left out.', Type.Array(ref(UsageBucket))),
          400: errorResponse('A query parameter is invalid.', ['invalid_parameter']),
          401: UNAUTHORIZED,
          404: errorResponse('There is no key `keyId` in the caller\'s account.', ['not_found']),
          429: TOO_MANY_REQUESTS,
        },
      },
    },
    async (request) => {
      const { keyId, ...query } = request.query
      const key = request.apiKey!
      // The calling key is its account's: no lookup for its own history. Another key's is
      // what GET /v1/keys/{id}/usage shows, with keys:read: without it, a key learnt which
      // ids were its account's keys, and when each was used.
      if (keyId !== undefined && keyId !== key.id) {
        if (!key.scopes.includes('keys:read')) throw insufficientScope(key, 'keys:read', 'another key\'s usage needs')
        if (!(await keyAdmin.find(keyId, key))) throw new ApiError('not_found', `There is no key with id ${keyId} in this account.`)
      }
      return historyOf(usage, keyId === undefined ? { accountId: key.accountId } : { accountId: key.accountId, keyId }, query, clock.now())
    },
  )

  refuseOtherMethods(app, '/usage', ['GET'])
  refuseOtherMethods(app, '/usage/history', ['GET'])
}
