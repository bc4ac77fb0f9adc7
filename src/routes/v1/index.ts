// The /v1 scope: every operation here needs an API key. Hook order matters:
// identify the caller, then rate-limit, then refuse callers without a valid key,
// so that even a 401 is counted and carries the rate-limit headers.
import type { FastifyInstance } from 'fastify'
import type { Authenticator } from '../../api-keys/authenticator.js'
import type { Clock } from '../../clock.js'
import type { Store } from '../../db/store.js'
import { ApiError } from '../../errors.js'
import { createAuthHooks } from '../../plugins/authenticate.js'
import { createRateLimitHook } from '../../plugins/rate-limit.js'
import type { RateLimiter } from '../../rate-limit/limiter.js'
import { sendError } from '../../plugins/error-handler.js'
import { refuseOtherMethods } from '../method-not-allowed.js'
import { petRoutes } from './pets.js'

export interface V1Options {
  authenticator: Authenticator
  limiter: RateLimiter
  store: Store
  clock: Clock
}

export async function v1Routes(app: FastifyInstance, { authenticator, limiter, store, clock }: V1Options) {
  const auth = createAuthHooks(authenticator)
  app.decorateRequest('apiKey', null)
  app.decorateRequest('authFailure', null)
  const rateLimit = createRateLimitHook(limiter)
  // One hook running the three steps in order rather than three hooks: each hook
  // costs every request a promise and a trip through Fastify's hook runner.
  app.addHook('onRequest', async (request, reply) => {
    await auth.identify(request)
    await rateLimit(request, reply)
    auth.requireApiKey(request)
  })

  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger())
  refuseOtherMethods(app, '/openapi.json', ['GET'], { public: true })
  await app.register(petRoutes, { store, clock })
  refuseOtherMethods(app, '/pets', ['GET', 'POST'])
  refuseOtherMethods(app, '/pets/:petId', ['GET'])

  // Unknown /v1 routes (orders included, decision D10) are 404, after authentication.
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new ApiError('not_found', `There is no route ${request.method} ${request.url.split('?')[0]}.`)),
  )
}
