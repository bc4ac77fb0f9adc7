// Authentication for the /v1 scope, in two steps so that the rate limiter can run
// between them: `identify` learns who is calling (a key, or an address when the
// key is missing or bad), `requireApiKey` then refuses callers without a valid key.
import type { FastifyRequest } from 'fastify'
import type { AuthResult, Authenticator } from '../api-keys/authenticator.js'
import type { ApiKeyRecord } from '../db/api-key-repository.js'
import { ApiError } from '../errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A /v1 route that answers without a key (the OpenAPI document). */
    public?: boolean
  }
  interface FastifyRequest {
    /** The caller's key, once `identify` has accepted it. */
    apiKey: ApiKeyRecord | null
    /** Why the key was refused, when it was. */
    authFailure: { missing: boolean; message: string } | null
  }
}

function record(request: FastifyRequest, result: AuthResult) {
  if (result.ok) request.apiKey = result.key
  else request.authFailure = { missing: result.missing, message: result.message }
}

export function createAuthHooks(authenticator: Authenticator) {
  return {
    /** Synchronous when the authenticator answers at once (a cached key): no promise then. */
    identify(request: FastifyRequest): void | Promise<void> {
      const result = authenticator.authenticate(request.headers.authorization)
      if (result instanceof Promise) return result.then((settled) => record(request, settled))
      record(request, result)
    },

    /** Throws the 401 for a caller without a valid key. Synchronous: it never waits, so no promise. */
    requireApiKey(request: FastifyRequest) {
      const failure = request.authFailure
      if (!failure || request.routeOptions.config.public) return
      // RFC 6750 §3: a challenge on every 401; error="invalid_token" when one was sent.
      const challenge = failure.missing ? 'Bearer realm="petstore"' : 'Bearer realm="petstore", error="invalid_token"'
      throw new ApiError('unauthorized', failure.message, { headers: { 'www-authenticate': challenge } })
    },
  }
}
