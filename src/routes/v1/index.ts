// The /v1 scope: every operation here needs an API key; the guard (identify, rate
// limit, require a key) runs before each of them.
import type { FastifyInstance } from 'fastify'
import type { Authenticator } from '../../api-keys/authenticator.js'
import type { Clock } from '../../clock.js'
import type { Store } from '../../db/store.js'
import v1Guard from '../../plugins/v1-guard.js'
import type { RateLimiter } from '../../rate-limit/limiter.js'
import { answerNotFound } from '../../plugins/error-handler.js'
import { refuseOtherMethods } from '../method-not-allowed.js'
import { petRoutes } from './pets.js'
import { orderRoutes } from './orders.js'

export interface V1Options {
  authenticator: Authenticator
  limiter: RateLimiter
  store: Store
  clock: Clock
}

export async function v1Routes(app: FastifyInstance, { authenticator, limiter, store, clock }: V1Options) {
  await app.register(v1Guard, { authenticator, limiter })

  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger())
  refuseOtherMethods(app, '/openapi.json', ['GET'], { public: true })
  await app.register(petRoutes, { store, clock })
  refuseOtherMethods(app, '/pets', ['GET', 'POST'])
  refuseOtherMethods(app, '/pets/:petId', ['GET', 'PATCH', 'DELETE'])
  await app.register(orderRoutes, { store, clock })

  // Unknown /v1 routes are 404, after authentication.
  app.setNotFoundHandler(answerNotFound)
}
