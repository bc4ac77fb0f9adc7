// The OpenAPI 3.1 document, generated from the route schemas that also validate
// requests: there is no hand-kept copy to drift. Served at /v1/openapi.json by the
// /v1 scope (public, but rate-limited like every /v1 response).
import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import type { Config } from '../config.js'
import { ERROR_STATUS } from '../errors.js'
import { completeResponses, OPTIONAL_BODY } from './openapi-responses.js'
import { PLAN_LIMITS, PLANS } from '../vocabulary/plans.js'
import { SCOPE_PRESETS, SCOPES } from '../vocabulary/scopes.js'

/** The rate-limit table of the description, from the plans themselves (api-keys/plans.ts). */
function planTable(): string {
  const number = (n: number) => n.toLocaleString('en-US')
  const rows = PLANS.map((plan) => {
    if (plan === 'enterprise') return `| ${plan} | set per account | set per account |`
    const { perMinute, perDay } = PLAN_LIMITS[plan]
    return `| ${plan} | ${number(perMinute)} | ${number(perDay)} |`
  })
  return ['| Plan | Per minute | Per day |', '|---|---|---|', ...rows].join('\n')
}

const DESCRIPTION = `Browse and add animals available for adoption.

Every operation needs an API key, sent as \`Authorization: Bearer <key>\`, holding the
scope the operation lists under \`security\` (RFC 6750): ${SCOPES.map((scope) => `\`${scope}\``).join(', ')};
a write scope includes its read. Without it the answer is 403 \`insufficient_scope\`,
counted against the rate limits like any request. Keys made without \`scopes\` get
\`all\`: ${SCOPE_PRESETS.all.map((scope) => `\`${scope}\``).join(', ')}; the preset \`read_only\` is
${SCOPE_PRESETS.read_only.map((scope) => `\`${scope}\``).join(', ')}. A key can expire, be disabled, or be rolled (the
old key keeps working for a grace period); each then answers 401 saying so in
\`WWW-Authenticate\`.

## Accounts
Every key belongs to an **account** (\`GET /account\`), which owns everything its keys
make: orders, webhook endpoints, events, usage history and Idempotency-Key records.
Every key of the account sees them, within its scopes, and a rolled key keeps them.
The plan and its limits are the account's, set by the operator. A key with
\`keys:write\` manages the keys of its own account only, never a key holding a scope
it lacks, and never gives a scope it lacks or an expiry later than its own.

## Rate limits
Each account has two fixed windows, the UTC minute and the UTC day, shared by all its
keys; a request is served only if both have room, and only served requests count. A
ban for repeated requests while limited falls on the key that sent them.

${planTable()}

Every response carries \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and
\`X-RateLimit-Reset\` for the window with the fewest requests left, and the IETF draft
headers \`RateLimit-Policy\` and \`RateLimit\` for both. Over the limit the answer is
429 \`rate_limited\` with \`Retry-After\` (seconds): wait that long, then retry with
exponential backoff and jitter. A key that keeps sending while limited is banned for a
while: 429 \`key_banned\`, with \`Retry-After\` until the ban ends. Requests without a
valid key are limited per client address with the free plan's numbers.

## Deprecation
\`GET /pets/{petId}\` is deprecated and stops working on 5 December 2030
(\`Sunset\` header); from then on it answers 410 \`gone\`. Use \`GET /pets\` with the
\`status\` filter instead.

## Errors

Besides the answers listed on each operation, a method a path does not support
answers 405 \`method_not_allowed\` with an \`Allow\` header, and an unknown path 404
\`not_found\` (after the key check, so 401 without a key).

Errors always have the \`Error\` body \`{code, message, status}\`; \`code\` is one of:
${Object.entries(ERROR_STATUS)
  .map(([code, status]) => `\`${code}\` (${status})`)
  .join(', ')}.`

export default fp(
  async (app, { config }: { config: Config }) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Pet Store',
          version: '1.0.0',
          description: DESCRIPTION,
          // The reference page this service serves, at the production address.
          contact: { name: 'Pet Store API', url: `${new URL(config.publicUrl).origin}/docs` },
          license: { name: 'MIT', identifier: 'MIT' },
        },
        servers: [
          { url: config.publicUrl, description: 'Production' },
          { url: config.stagingUrl, description: 'Staging' },
        ],
        tags: [
          { name: 'pets', description: 'Animals available for adoption.' },
          { name: 'categories', description: 'The kinds of animal: every animal\'s `categoryId` names one.' },
          { name: 'store', description: 'Adoption: orders that reserve, then adopt or release an animal, and the inventory by status.' },
          { name: 'keys', description: 'API keys managing the keys of their own account (scopes `keys:read`, `keys:write`): make, list, change, roll, revoke, unban, and read their usage.' },
          { name: 'account', description: 'The account a key belongs to: its plan and the limits its keys share.' },
          { name: 'usage', description: 'What a key can see of its account\'s use: the rate-limit windows its keys share, and its history.' },
          { name: 'webhooks', description: 'Events, and endpoints they are sent to, signed to the Standard Webhooks specification, at least once, from a transactional outbox.' },
        ],
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
      // An optional body is marked for completeResponses (@fastify/swagger makes every body required).
      transform: ({ schema, url, route }) => ({ schema: route.config?.optionalBody ? { ...schema, [OPTIONAL_BODY]: true } : schema, url: url.replace(/^\/v1(?=\/)/, '') }),
      // Answers every operation can give (408, 431, 500, 503…), and which headers are always sent.
      transformObject: (document) => ('openapiObject' in document ? completeResponses(document.openapiObject) : document.swaggerObject),
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    })
  },
  { name: 'openapi' },
)
