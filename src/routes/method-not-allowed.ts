// RFC 9110 §15.5.6: a known path with a method it does not support answers 405
// with an Allow header, not 404.
import type { FastifyInstance, HTTPMethods } from 'fastify'
import { ApiError } from '../errors.js'

const METHODS: HTTPMethods[] = ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS']

export function refuseOtherMethods(app: FastifyInstance, url: string, allowed: HTTPMethods[], config: { public?: boolean } = {}) {
  const allow = allowed.includes('GET') && !allowed.includes('HEAD') ? [...allowed, 'HEAD'] : allowed
  const others = METHODS.filter((m) => !allow.includes(m))
  app.route({
    method: others,
    url,
    schema: { hide: true },
    config,
    handler: async (request) => {
      throw new ApiError('method_not_allowed', `${request.method} is not allowed on ${request.url.split('?')[0]}; it answers ${allow.join(', ')}.`, {
        headers: { allow: allow.join(', ') },
      })
    },
  })
}
