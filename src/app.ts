// buildApp: all the wiring, top to bottom, in registration order. It never listens
// and never reads the environment: server.ts and tests hand it its dependencies.
import type { Socket } from 'node:net'
import { constants as zlib } from 'node:zlib'
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import compress from '@fastify/compress'
import { createAuthenticator } from './api-keys/authenticator.js'
import { keyEnvironmentFor } from './api-keys/key-format.js'
import { systemClock, type Clock } from './clock.js'
import type { Config } from './config.js'
import { loggerOptions } from './logging.js'
import { createKeyAdmin } from './api-keys/key-admin.js'
import { createAccountAdmin } from './api-keys/account-admin.js'
import { createUsageRecorder, type UsageRecorder } from './usage/recorder.js'
import { parseCidrs } from './webhooks/outbound.js'
import { secretBoxFromConfig, type SecretBox } from './secrets/secret-box.js'
import { createIdempotency } from './idempotency/idempotency.js'
import { createWebhookAdmin } from './webhooks/webhook-admin.js'
import type { WritePacing } from './webhooks/write-pacing.js'
import { createOrderService } from './orders/order-service.js'
import { createCatalogue } from './catalogue/catalogue.js'
import type { Store } from './db/store.js'
import type { RateLimiter } from './rate-limit/limiter.js'
import errorHandler, { answerFrameworkError } from './plugins/error-handler.js'
import inFlight, { createRequestTracker, type RequestTracker } from './plugins/in-flight.js'
import jsonBody, { BODY_LIMIT } from './plugins/json-body.js'
import { BROTLI_QUALITY, COMPRESSION_THRESHOLD, GZIP_LEVEL, compressListsOnly } from './plugins/compression.js'
import openapi from './plugins/openapi.js'
import docs from './plugins/docs.js'
import consolePage from './plugins/console.js'
import requestLog, { requestId } from './plugins/request-log.js'
import { createValidatorCompiler, validateEveryQueryString } from './plugins/validation.js'
import health from './plugins/health.js'
import { answerClientError, limitConnectionsPerAddress } from './plugins/client-errors.js'
import metricsPlugin, { createMetrics, type Metrics } from './plugins/metrics.js'
import { v1Routes } from './routes/v1/index.js'
import { MAX_PARAM_LENGTH, routablePath } from './routes/request-path.js'
import { SHARED_SCHEMAS } from './schemas/shared.js'

export interface AppDependencies {
  config: Config
  store: Store
  /** The rate limiter (rate-limit/from-config.ts builds the one the config names); its owner closes it. */
  limiter: RateLimiter
  clock?: Clock
  /** Fastify (pino) logger options; false for silence (tests). */
  logger?: FastifyServerOptions['logger']
  /**
   * The usage history's recorder; its owner closes it (writing what is left) before
   * the store. When absent, the app makes one and closes it with itself.
   */
  usage?: UsageRecorder
  /** Wakes this instance's webhook dispatcher (server.ts runs it), so a test event goes at once. */
  wakeDispatcher?: () => void
  /** Tells this instance's webhook dispatcher an endpoint changed (server.ts), so that it sends nothing it held back for it as it was. */
  endpointChanged?: (endpointId: number) => void
  /** Seals the webhook signing secrets and the secrets kept for Idempotency-Key replays; by default, the config's (secrets/secret-box.ts). */
  secrets?: SecretBox
  /** GET /metrics' answer, when it is not this process's metrics alone (a cluster worker: every worker's, cluster.ts). */
  scrapeMetrics?: () => Promise<string>
  /** GET /metrics' metrics, when the caller counts into them too (server.ts: its dispatcher's attempts); else the app makes its own. */
  metrics?: Metrics
  /** The requests under way, when the caller reads their counts too (server.ts: its dispatcher's request pressure); else the app keeps its own. */
  requests?: RequestTracker
  /** Paces the writes that make events while this process's dispatcher falls behind (server.ts); none by default. */
  writePacing?: WritePacing
}

export async function buildApp({ config, store, clock = systemClock, limiter, logger, usage: givenUsage, wakeDispatcher = () => {}, endpointChanged, metrics = createMetrics(), secrets = secretBoxFromConfig(config), scrapeMetrics, requests = createRequestTracker(), writePacing }: AppDependencies): Promise<FastifyInstance> {
  const app = Fastify({
    logger: logger ?? loggerOptions(config),
    // request-log writes one line per request instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // Errors the router raises before any route or hook runs (a malformed URL).
    frameworkErrors: answerFrameworkError,
    // No path reaches frameworkErrors for its length or encoding: see request-path.ts.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    rewriteUrl: routablePath,
    genReqId: requestId,
    bodyLimit: BODY_LIMIT,
    trustProxy: config.trustProxy,
    // Slow or stalled clients cannot hold a connection: headers must arrive within
    // headersTimeout, a request whole within requestTimeout, and an idle keep-alive
    // connection closes after keepAliveTimeout. Node checks the first two every
    // connectionsCheckingInterval, 30 s by default: a 10 s limit was a 408 at up to 40 s.
    http: { connectionsCheckingInterval: Math.min(1_000, config.headersTimeout * 250) },
    requestTimeout: config.requestTimeout * 1000,
    keepAliveTimeout: config.keepAliveTimeout * 1000,
    connectionTimeout: (config.requestTimeout + config.keepAliveTimeout) * 1000,
    clientErrorHandler: answerClientError,
    // While closing, requests on open connections are still answered (with
    // Connection: close, see below), rather than Fastify's own 503 body.
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>()
  // Headers must arrive within 10 s (slowloris), before the whole-request timeout.
  app.server.headersTimeout = Math.min(config.headersTimeout, config.requestTimeout) * 1000
  limitConnectionsPerAddress(app.server, config.maxConnectionsPerIp)

  let closing = false
  // Node keeps a connection that has not sent a whole request (a balancer's spare one,
  // a scanner's, half a header block) open through close() until its own timeout, 35 s
  // by default: draining closes every connection with no response under way. Node's
  // own mark of one: the socket's _httpMessage, set when a request's headers are in and
  // cleared when its response has finished (a compressed answer still streaming, or a
  // POST whose body is still arriving, keeps its connection).
  const responding = (socket: Socket) => (socket as Socket & { _httpMessage?: unknown })._httpMessage != null
  const connections = new Set<Socket>()
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket)
    socket.once('close', () => connections.delete(socket))
  })
  let closeUnused: NodeJS.Timeout | undefined
  app.addHook('preClose', async () => {
    closing = true
    // The requests already under way are told too (later ones by the onRequest hook below).
    requests.each((reply) => {
      if (!reply.raw.headersSent) reply.header('connection', 'close')
    })
    closeUnused = setInterval(() => {
      for (const socket of connections) if (!responding(socket) && socket.writableLength === 0) socket.destroy()
    }, 100)
  })
  app.addHook('onClose', async () => clearInterval(closeUnused))
  // Callback style (with `done`): it runs on every request and never waits, so it
  // skips the promise an async hook costs.
  app.addHook('onRequest', (_request, reply, done) => {
    // RFC 9112 §9.6: tell keep-alive clients to go elsewhere while this instance drains.
    if (closing) reply.header('connection', 'close')
    done()
  })

  app.setValidatorCompiler(createValidatorCompiler(SHARED_SCHEMAS))
  app.addHook('onRoute', validateEveryQueryString)
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema)

  // Cross-cutting plugins first: they see every route registered after them.
  await app.register(errorHandler)
  // The requests under way, and one deadline for the whole answer to each, whatever it waits on (plugins/in-flight.ts).
  await app.register(inFlight, { deadlineMs: config.requestDeadline * 1000, tracker: requests })
  await app.register(requestLog)
  await app.register(jsonBody)
  // Responses above 1 KiB (lists, /metrics) in br or gzip for clients that accept it, at
  // the fastest levels; the operations that answer one object skip it (plugins/compression.ts).
  // Request bodies are not decompressed: a compressed upload is a 415, not a zip bomb.
  app.addHook('onRoute', compressListsOnly)
  await app.register(compress, {
    threshold: COMPRESSION_THRESHOLD,
    encodings: ['br', 'gzip'],
    brotliOptions: { params: { [zlib.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY } },
    zlibOptions: { level: GZIP_LEVEL },
    globalDecompression: false,
  })
  await app.register(openapi, { config })

  const authenticator = createAuthenticator({
    apiKeys: store.apiKeys,
    background: store.background.apiKeys,
    clock,
    environment: keyEnvironmentFor(config.environment),
    onError: (error, what) => app.log.warn({ err: error }, what),
    storeRefusing: () => store.circuitOpen === true,
  })
  const usage = givenUsage ?? createUsageRecorder({ usage: store.usage, writes: store.background.usage, clock, onError: (error) => app.log.warn({ err: error }, 'could not write usage counts; kept for the next try') })
  if (!givenUsage) app.addHook('onClose', () => usage.close())
  const keyAdmin = createKeyAdmin({ apiKeys: store.apiKeys, limiter, clock, environment: keyEnvironmentFor(config.environment), onChanged: (ids) => authenticator.forget(ids), maxKeys: config.maxKeys })
  const accountAdmin = createAccountAdmin({ accounts: store.accounts, keyAdmin, clock })
  const catalogue = createCatalogue({ pets: store.pets, categories: store.categories, clock, maxCategories: config.maxCategories })
  const orderService = createOrderService({ orders: store.orders, pets: store.pets, clock })
  const webhookAdmin = createWebhookAdmin({
    endpoints: store.webhookEndpoints,
    clock,
    allowHttp: config.environment !== 'production',
    allowed: parseCidrs(config.webhookAllowCidrs),
    maxEndpoints: config.webhookMaxEndpoints,
    secrets,
    wake: wakeDispatcher,
    ...(endpointChanged && { endpointChanged }),
  })

  // Operations endpoints, outside /v1: no key, no rate limit.
  await app.register(metricsPlugin, { metrics, limiter, store, clock, ...(scrapeMetrics ? { scrape: scrapeMetrics } : {}), writePacing, route: config.metricsPort === undefined })
  await app.register(health, { store, limiter })
  // GET /docs: the API reference page, also outside /v1 (no key; limited as keyless requests are).
  await app.register(docs, { limiter })
  // GET /console: the web console's files (the page calls /v1 with the user's key).
  await app.register(consolePage)
  // Idempotency-Key for every create: the records are the one part of the store the routes hold.
  const idempotency = createIdempotency({ records: store.idempotency, clock, secrets })
  await app.register(v1Routes, { prefix: '/v1', authenticator, limiter, idempotency, clock, keyAdmin, accountAdmin, usage, metrics, catalogue, orderService, webhookAdmin, writePacing })

  return app
}
