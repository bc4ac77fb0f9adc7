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
import { orderRoutes } from './orders.js'

export interface V1Options {
  authenticator: Authenticator
  limiter: RateLimiter
  store: Store
  clock: Clock
}

/** Runs `run`, then `next` at once if it finished synchronously, or once its promise resolves; a failure goes to `fail`. */
function step(run: () => void | Promise<void>, fail: (error: Error) => void, next: () => void): void {
  let pending: void | Promise<void>
  try {
    pending = run()
  } catch (error) {
    return fail(error as Error)
  }
  if (pending) pending.then(next, fail)
  else next()
}

export async function v1Routes(app: FastifyInstance, { authenticator, limiter, store, clock }: V1Options) {
  const auth = createAuthHooks(authenticator)
  app.decorateRequest('apiKey', null)
  app.decorateRequest('authFailure', null)
  const rateLimit = createRateLimitHook(limiter)
  // One hook running the three steps in order rather than three hooks (each costs a
  // trip through Fastify's hook runner), in callback style: with the key cached and
  // the counters in memory every step answers at once, and no promise is made.
  app.addHook('onRequest', (request, reply, done) => {
    step(() => auth.identify(request), done, () =>
      step(() => rateLimit(request, reply), done, () =>
        step(() => auth.requireApiKey(request), done, () => done())))
  })

  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger())
  refuseOtherMethods(app, '/openapi.json', ['GET'], { public: true })
  await app.register(petRoutes, { store, clock })
  refuseOtherMethods(app, '/pets', ['GET', 'POST'])
  refuseOtherMethods(app, '/pets/:petId', ['GET'])
  await app.register(orderRoutes, { store, clock })

  // Unknown /v1 routes (orders included, decision D10) are 404, after authentication.
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new ApiError('not_found', `There is no route ${request.method} ${request.url.split('?')[0]}.`)),
  )
}
