// GET /docs: the interactive API reference (Swagger UI), rendered from the OpenAPI
// document that /v1/openapi.json serves. Outside /v1: no key, but counted and limited
// by address like any request without a key, and the document is answered from memory
// (serialized and compressed once, with an ETag). Swagger UI's files come from @fastify/swagger-ui's own copy, so the page
// loads nothing from another host (users run it offline and behind firewalls); the
// Content-Security-Policy below makes the browser refuse anything that would.
import fp from 'fastify-plugin'
import type { FastifyError } from 'fastify'
import swaggerUi from '@fastify/swagger-ui'
import type { RateLimiter } from '../rate-limit/limiter.js'
import { staticJson } from './static-json.js'
import { anonymousLimit } from './v1-guard.js'

const DOCS_PREFIX = '/docs'

/** The page's own server, listed first so that "Try it out" calls this instance. */
const THIS_SERVER = { url: '/v1', description: 'This server' }

// Only this origin, for everything. Swagger UI needs no inline script (its
// initializer is a file, swagger-initializer.js) and sets styles through the DOM,
// which style-src does not govern; its icons are data: URIs. connect-src 'self'
// also blocks "Try it out" against the production and staging servers the document
// lists: from this page, requests go to this server only.
/** The page's own origin alone, no inline script: the docs page's and the console's policy. */
export const SAME_ORIGIN_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/**
 * The docs page's and the console's headers beside their CSP: not framed (older browsers
 * read X-Frame-Options, not frame-ancestors), no referrer to the hosts they link to, no
 * sniffing, and no handle on them kept by a page of another origin that opened them.
 */
export const PAGE_HEADERS = {
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cross-origin-opener-policy': 'same-origin',
}

export default fp(
  async (app, { limiter }: { limiter: RateLimiter }) => {
    app.addHook('onRequest', anonymousLimit(limiter))
    // The document the page loads, with this server first in `servers` (the production
    // and staging URLs stay listed after it): built from /v1/openapi.json's (one source,
    // no copy to drift) on the first request, then answered from memory.
    const documentJson = staticJson(() => {
      const document = app.swagger() as { servers?: unknown[] }
      return { ...document, servers: [THIS_SERVER, ...(document.servers ?? [])] }
    })
    // @fastify/static refuses paths such as /docs/static/../package.json with a 403
    // error. There is no such file: answer the JSON 404 every unknown path gets. Other
    // errors go on to the app's error handler.
    app.setErrorHandler((error: FastifyError, _request, reply) => {
      if (error.statusCode === 403) return reply.callNotFound()
      throw error
    })
    await app.register(swaggerUi, {
      routePrefix: DOCS_PREFIX,
      staticCSP: SAME_ORIGIN_CSP,
      // No validator badge: it would send the document to validator.swagger.io.
      validatorUrl: false,
      theme: { title: 'Pet Store API reference' },
      uiConfig: {
        // No top bar: its "Explore" box would invite loading documents from elsewhere.
        layout: 'BaseLayout',
        deepLinking: true,
        displayOperationId: true,
        displayRequestDuration: true,
      },
      uiHooks: {
        // The renderer also offers /docs/yaml; the page does not need a third copy.
        onRequest: async (request, reply) => {
          reply.headers(PAGE_HEADERS)
          if (request.routeOptions.url === `${DOCS_PREFIX}/yaml`) return reply.callNotFound()
          // The renderer's own redirect of this path keeps a query string, and then
          // redirects to itself without end (each hop counted against the address).
          if (request.routeOptions.url === `${DOCS_PREFIX}/static/index.html`) return reply.redirect(`${DOCS_PREFIX}/`)
          if (request.routeOptions.url === `${DOCS_PREFIX}/json`) return documentJson(request, reply)
        },
      },
    })
  },
  // Encapsulated, so that the error handler above governs /docs alone.
  { name: 'docs', dependencies: ['openapi'], encapsulate: true },
)
