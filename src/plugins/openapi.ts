// The OpenAPI 3.1 document, generated from the route schemas that also validate
// requests: there is no hand-kept copy to drift. Served at /v1/openapi.json.
import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import type { Config } from '../config.js'
import { ERROR_STATUS } from '../errors.js'
import { refuseOtherMethods } from '../routes/method-not-allowed.js'

const DESCRIPTION = `Browse and add animals available for adoption.

Every operation needs an API key, sent as \`Authorization: Bearer <key>\`.

Errors always have the \`Error\` body \`{code, message, status}\`; \`code\` is one of:
${Object.entries(ERROR_STATUS)
  .map(([code, status]) => `\`${code}\` (${status})`)
  .join(', ')}.`

export default fp(
  async (app, { config }: { config: Config }) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: { title: 'Pet Store', version: '1.0.0', description: DESCRIPTION },
        servers: [
          { url: config.publicUrl, description: 'Production' },
          { url: config.stagingUrl, description: 'Staging' },
        ],
        tags: [{ name: 'pets', description: 'Animals available for adoption.' }],
        components: {
          securitySchemes: {
            apiKey: {
              type: 'http',
              scheme: 'bearer',
              description: 'An API key: `ps_live_…` in production, `ps_test_…` in staging and development.',
            },
          },
        },
        security: [{ apiKey: [] }],
      },
      hideUntagged: true,
      // Server URLs end in /v1, so paths are written without it.
      transform: ({ schema, url }) => ({ schema, url: url.replace(/^\/v1(?=\/)/, '') }),
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    })

    app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger())
    refuseOtherMethods(app, '/v1/openapi.json', ['GET'])
  },
  { name: 'openapi' },
)
