// The caller's account (decision D11): its plan and limits, shared by all its keys, and
// the calling key itself (its scopes). Any valid key may read it; accounts are made and
// changed by the operator alone.
import type { FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { AccountAdmin } from '../../api-keys/account-admin.js'
import { Account } from '../../schemas/key.js'
import { response, TOO_MANY_REQUESTS, UNAUTHORIZED } from '../../schemas/responses.js'
import { ref } from '../../schemas/shared.js'
import { refuseOtherMethods } from '../method-not-allowed.js'

export async function accountRoutes(app: FastifyInstance, { accountAdmin }: { accountAdmin: AccountAdmin }) {
  const v1 = app.withTypeProvider<TypeBoxTypeProvider>()

  v1.get(
    '/account',
    {
      schema: {
        operationId: 'getAccount',
        tags: ['account'],
        summary: 'Your account',
        description:
          'The account the calling key belongs to: its plan, the limits all its keys share, and how many keys it has; and the calling key itself (`callingKey`): its scopes and expiry, so that a client can offer only what the key may do. Any valid key may ask.',
        response: { 200: response('The account.', ref(Account)), 401: UNAUTHORIZED, 429: TOO_MANY_REQUESTS },
      },
    },
    // A valid key's account exists: keys are never moved nor accounts deleted.
    async (request) => (await accountAdmin.forKey(request.apiKey!))!,
  )

  refuseOtherMethods(app, '/account', ['GET'])
}
