// One JSON log line per request, carrying the request id that the response echoes
// in X-Request-Id. Fastify's logger writes it; headers (and so keys) are never logged.
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import fp from 'fastify-plugin'

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Keeps a caller's X-Request-Id when it is sane, so logs join across services. */
export function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID()
}

export default fp(
  async (app) => {
    // Callback-style hooks (with `done`): they run on every request and never wait,
    // so they skip the promise an async hook costs.
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id)
      done()
    })
    // The level is set once, when the app is built: below info, the line is not even assembled.
    const logsRequests = ['trace', 'debug', 'info'].includes(app.log.level)
    app.addHook('onResponse', (request, reply, done) => {
      if (!logsRequests) return done()
      request.log.info(
        {
          method: request.method,
          // As sent: request.url is the routable form (request-path.ts), "%25zz" for "%zz".
          url: request.originalUrl,
          route: request.routeOptions.url,
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 10) / 10,
          key: request.apiKey?.prefix,
        },
        'request',
      )
      done()
    })
  },
  { name: 'request-log' },
)
