// One JSON log line per request, carrying the request id that the response echoes
// in X-Request-Id. Fastify's logger writes it; headers (and so keys) are never logged,
// nor a secret sent in the URL.
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import fp from 'fastify-plugin'

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** A query parameter whose name says it holds a secret, or an API key anywhere in the URL. */
const SECRET_IN_URL = /([?&][^=&#]*(?:pass|secret|token|key)[^=&#]*=)[^&#]*|(ps_(?:live|test)_)[A-Za-z0-9]+/gi

/**
 * The URL as sent, for the log, without what a client should have put in a header: a
 * key in the query string (`?api_key=…`, as some tools offer) is refused, and must not
 * then sit in the logs.
 */
export function loggableUrl(url: string): string {
  return url.includes('?') || url.includes('ps_') ? url.replace(SECRET_IN_URL, (_match, parameter: string | undefined, prefix: string | undefined) => `${parameter ?? prefix}***`) : url
}

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
          url: loggableUrl(request.originalUrl),
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
