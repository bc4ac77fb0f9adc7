// The /v1 scope: every operation here needs an API key; the guard (identify, rate
// limit, require a key) runs before each of them.
import { staticJson } from '../../plugins/static-json.js'
import type { FastifyInstance, onRequestHookHandler } from 'fastify'
import type { Authenticator } from '../../api-keys/authenticator.js'
import type { Clock } from '../../clock.js'
import type { Idempotency } from '../../idempotency/idempotency.js'
import v1Guard from '../../plugins/v1-guard.js'
import type { RateLimiter } from '../../rate-limit/limiter.js'
import { answerNotFound } from '../../plugins/error-handler.js'
import { refuseOtherMethods } from '../method-not-allowed.js'
import { petRoutes } from './pets.js'
import { orderRoutes } from './orders.js'
import type { OrderService } from '../../orders/order-service.js'
import type { Catalogue } from '../../catalogue/catalogue.js'
import { categoryRoutes } from './categories.js'
import { applyOperationScopes } from './scopes.js'
import { keyRoutes } from './keys.js'
import { usageRoutes } from './usage.js'
import { accountRoutes } from './account.js'
import { webhookRoutes } from './webhooks.js'
import type { KeyAdmin } from '../../api-keys/key-admin.js'
import type { AccountAdmin } from '../../api-keys/account-admin.js'
import type { UsageRecorder } from '../../usage/recorder.js'
import type { UsageOutcome } from '../../vocabulary/usage.js'
import type { Metrics } from '../../plugins/metrics.js'
import type { WebhookAdmin } from '../../webhooks/webhook-admin.js'
import type { WritePacing } from '../../webhooks/write-pacing.js'

export interface V1Options {
  authenticator: Authenticator
  limiter: RateLimiter
  /** Idempotency-Key for every create (src/idempotency/, over the store's records): the one part of the store the routes hold. */
  idempotency: Idempotency
  clock: Clock
  keyAdmin: KeyAdmin
  accountAdmin: AccountAdmin
  usage: UsageRecorder
  metrics: Metrics
  catalogue: Catalogue
  orderService: OrderService
  webhookAdmin: WebhookAdmin
  /** Paces the writes that make events while the webhooks fall behind (server.ts, with a dispatcher in the process). */
  writePacing?: WritePacing | undefined
}

export async function v1Routes(app: FastifyInstance, { authenticator, limiter, idempotency, clock, keyAdmin, accountAdmin, usage, metrics, catalogue, orderService, webhookAdmin, writePacing }: V1Options) {
  await app.register(v1Guard, { authenticator, limiter, clock })
  applyOperationScopes(app)
  // On the paced routes alone (no cost to the others), after the guard: a write refused
  // for its key, its limits or its scope never waits for a permit.
  if (writePacing) {
    const pace: onRequestHookHandler = (request, reply, done) => {
      const waiting = writePacing.admit(() => reply.sent || request.raw.destroyed)
      if (waiting === undefined) return done()
      waiting.then(() => done(), done)
    }
    app.addHook('onRoute', (route) => {
      if (route.config?.paced) route.onRequest = [...[route.onRequest ?? []].flat(), pace]
    })
  }
  // Every answer to a valid key is counted for its usage history and /metrics, refusals included.
  app.addHook('onResponse', (request, reply, done) => {
    const key = request.apiKey
    if (key !== null) {
      const outcome = outcomeOf(reply.statusCode, request.rateLimitOutcome)
      usage.record(key, outcome)
      metrics.apiRequests.inc(key.plan, outcome)
    }
    done()
  })

  // Serialized and compressed once, with an ETag (plugins/static-json.ts).
  const openapiJson = staticJson(() => app.swagger())
  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, (request, reply) => openapiJson(request, reply))
  refuseOtherMethods(app, '/openapi.json', ['GET'], { public: true })
  await app.register(petRoutes, { pets: catalogue.pets, idempotency, clock })
  refuseOtherMethods(app, '/pets', ['GET', 'POST'])
  refuseOtherMethods(app, '/pets/:petId', ['GET', 'PATCH', 'DELETE'])
  await app.register(categoryRoutes, { categories: catalogue.categories, idempotency })
  await app.register(orderRoutes, { orderService, idempotency })
  await app.register(keyRoutes, { keyAdmin, usage, idempotency, clock })
  await app.register(usageRoutes, { keyAdmin, limiter, usage, clock })
  await app.register(accountRoutes, { accountAdmin })
  await app.register(webhookRoutes, { webhookAdmin, idempotency })

  // Unknown /v1 routes are 404, after authentication.
  app.setNotFoundHandler(answerNotFound)
}

function outcomeOf(status: number, limited: 'limited' | 'banned' | undefined): UsageOutcome {
  if (status >= 500) return 'error'
  if (status === 429) return limited === 'banned' ? 'banned' : 'rate_limited'
  if (status === 403) return 'forbidden'
  return 'ok'
}
