// One JSON log line per request, carrying the request id that the response echoes
// in X-Request-Id. Fastify's logger writes it; headers (and so keys) are never logged,
// nor a secret sent in the URL.
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import fp from 'fastify-plugin'
import { SECRET_PARAMETER } from '../config.js'

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** An API key, wherever it appears. */
const API_KEY = /(ps_(?:live|test)_)[A-Za-z0-9]+/g
/** The longest URL logged whole; a longer one is cut (the request line may be 16 KB). */
const MAX_LOGGED_URL = 2_048

/**
 * The URL as sent, for the log, without what a client should have put in a header: a
 * key in the query string (`?api_key=…`, as some tools offer) is refused, and must not
 * then sit in the logs. One pass over the text, each parameter once (a single regular
 * expression over the query backtracked quadratically on a long name without `=`).
 */
export function loggableUrl(sent: string): string {
  const url = sent.length > MAX_LOGGED_URL ? `${sent.slice(0, MAX_LOGGED_URL)}…` : sent
  if (!url.includes('ps_') && !SECRET_PARAMETER.test(url)) return url
  const start = url.indexOf('?')
  const path = (start === -1 ? url : url.slice(0, start)).replace(API_KEY, '$1***')
  if (start === -1) return path
  const parameters = url
    .slice(start + 1)
    .split('&')
    .map((parameter) => {
      const equals = parameter.indexOf('=')
      if (equals !== -1 && SECRET_PARAMETER.test(parameter.slice(0, equals))) return `${parameter.slice(0, equals)}=***`
      return parameter.replace(API_KEY, '$1***')
    })
  return `${path}?${parameters.join('&')}`
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
