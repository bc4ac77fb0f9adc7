// RFC 9110 §15.5.6: a known path with a method it does not support answers 405
// with an Allow header, not 404.
import type { FastifyInstance, FastifyRequest, HTTPMethods } from 'fastify'
import { ApiError } from '../errors.js'
import { answerNotFound, METHODS } from '../plugins/error-handler.js'


/**
 * Answers 405 for the methods `url` does not allow. When `url` ends in a path
 * parameter (`/pets/:petId`), its parent with a trailing slash (`/pets/`) is
 * claimed too, as an unknown route: the router would otherwise match it with an
 * empty parameter, and `GET /v1/pets/` would answer as getPet. Like Stripe and
 * GitHub, a trailing slash names another resource (RFC 3986), here none: 404.
 */
export function refuseOtherMethods(app: FastifyInstance, url: string, allowed: HTTPMethods[], config: { public?: boolean } = {}) {
  const allow = allowed.includes('GET') && !allowed.includes('HEAD') ? [...allowed, 'HEAD'] : allowed
  const others = METHODS.filter((m) => !allow.includes(m))
  const refusal = (request: FastifyRequest) =>
    new ApiError('method_not_allowed', `${request.method} is not allowed on ${request.originalUrl.split('?')[0]}; it answers ${allow.join(', ')}.`, {
      headers: { allow: allow.join(', ') },
    })
  app.route({
    method: others,
    url,
    schema: { hide: true },
    config,
    // Decided on the request line, after the key and the rate limit (the scope's hooks
    // run first) and before a body is read: a body sent with it is never read (the
    // connection is closed instead, plugins/json-body.ts).
    onRequest: (request, _reply, done) => done(refusal(request)),
    // Not reached (onRequest refuses every request); a route must have one.
    handler: async (request) => {
      throw refusal(request)
    },
  })
  const emptyParameter = /\/:[^/]+$/.exec(url)
  if (emptyParameter) {
    app.route({ method: METHODS, url: `${url.slice(0, emptyParameter.index)}/`, schema: { hide: true }, config, handler: answerNotFound })
  }
}
