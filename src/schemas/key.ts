// API keys as the admin API shows them, and the usage a key can see of itself:
// one schema per shape, for validation, serialization, the document and the types.
import { Type, type Static } from 'typebox'
import { PLANS } from '../vocabulary/plans.js'
import { SCOPE_PRESETS, SCOPES } from '../vocabulary/scopes.js'
import { USAGE_OUTCOMES } from '../vocabulary/usage.js'
import { idSchema } from './pet.js'
import { LABEL_TEXT, LABEL_TEXT_NOTE } from './text.js'

const id = (description: string) => idSchema(description, { examples: [1] })
const timestamp = (description: string) => Type.String({ format: 'date-time', description: `${description} ISO 8601, UTC, with milliseconds.` })
const nullableTimestamp = (description: string) => Type.Union([timestamp(description), Type.Null()], { description })

const PlanSchema = Type.Unsafe<(typeof PLANS)[number]>({ type: 'string', enum: [...PLANS], description: 'The account\'s plan: its rate limits (enterprise: the account\'s own), shared by all its keys.' })
const ScopeList = Type.Array(Type.Unsafe<(typeof SCOPES)[number]>({ type: 'string', enum: [...SCOPES] }), {
  uniqueItems: true,
  maxItems: SCOPES.length,
  description: `What the key may do (a \`write\` scope implies its \`read\`): ${SCOPES.map((s) => `\`${s}\``).join(', ')}. Default: every scope but \`keys:*\` (${SCOPE_PRESETS.all.join(', ')}).`,
})
const PRESETS = Object.keys(SCOPE_PRESETS) as (keyof typeof SCOPE_PRESETS)[]
const scopeOrPresetList = (then: string) =>
  Type.Array(Type.Unsafe<(typeof SCOPES)[number] | keyof typeof SCOPE_PRESETS>({ type: 'string', enum: [...SCOPES, ...PRESETS] }), {
    uniqueItems: true,
    maxItems: SCOPES.length + PRESETS.length,
    description: `What the key may do (a \`write\` scope implies its \`read\`): ${SCOPES.map((s) => `\`${s}\``).join(', ')}, or the presets \`all\` (${SCOPE_PRESETS.all.join(', ')}) and \`read_only\` (${SCOPE_PRESETS.read_only.join(', ')}). ${then}\`[]\`: a key with no scope, which can read its account and its usage alone. No scope the calling key lacks.`,
  })
const AccountLimits = Type.Object({ perMinute: Type.Integer(), perDay: Type.Integer() }, { additionalProperties: false, description: 'The rate limits the account\'s keys share.' })
const Name = Type.String({ minLength: 1, maxLength: 100, ...LABEL_TEXT, description: `A label for people: ${LABEL_TEXT_NOTE}.` })

export const ApiKey = Type.Object(
  {
    id: id('Identifier of the key.'),
    accountId: id('The account that owns the key and everything it makes.'),
    name: Name,
    plan: PlanSchema,
    limits: AccountLimits,
    scopes: ScopeList,
    prefix: Type.String({ description: 'The start of the key (`ps_live_AbCd`), to recognise it; never the secret.' }),
    status: Type.Unsafe<'active' | 'disabled' | 'expired' | 'revoked' | 'banned'>({
      type: 'string',
      enum: ['active', 'disabled', 'expired', 'revoked', 'banned'],
      description: '`active`; `disabled` (refused until enabled again); `expired`; `revoked` (for good); `banned` (temporarily, see `bannedUntil`).',
    }),
    bannedUntil: nullableTimestamp('While `banned`: when the ban ends.'),
    createdAt: timestamp('When the key was made.'),
    lastUsedAt: nullableTimestamp('When the key was last used (to the minute).'),
    expiresAt: nullableTimestamp('When the key stops working; null: never.'),
    revokedAt: nullableTimestamp('When the key was revoked.'),
    replacedBy: Type.Union([id('The key a roll made from this one.'), Type.Null()], { description: 'The key a roll made from this one; null if none.' }),
    createdBy: Type.Union([id('The key that made this one.'), Type.Null()], { description: 'The key that made this one over the API (a key that rolled itself made its successor); null: the operator.' }),
  },
  { $id: 'ApiKey', additionalProperties: false, description: 'An API key, never its secret.' },
)
export type ApiKey = Static<typeof ApiKey>

/** `expiresIn` as text: seconds, or a number of s, m, h or d; and that in words, for a 400 (plugins/validation.ts). */
export const DURATION_PATTERN = '^[1-9][0-9]{0,8}[smhd]?$'
export const DURATION_WORDS = 'a duration: a whole number without leading zeros, then s, m, h or d, such as "90s", "30m", "12h" or "30d"'

export const NewApiKey = Type.Object(
  {
    name: Type.Optional(Name),
    scopes: Type.Optional(scopeOrPresetList('Default: `all`. ')),
    expiresIn: Type.Optional(
      Type.Union([Type.Integer({ minimum: 1, maximum: 366 * 86_400 }), Type.String({ pattern: DURATION_PATTERN })], {
        description: 'How long until the key stops working: seconds (`3600`), or a duration (`"90s"`, `"30m"`, `"12h"`, `"30d"`); at most 366 days. Absent: as long as the calling key (never, if it never expires); never later than the calling key.',
        examples: ['30d'],
      }),
    ),
  },
  {
    $id: 'NewApiKey',
    additionalProperties: false,
    description: 'A key to make in the caller\'s account, on the account\'s plan. The calling key can give no scope it lacks and no expiry later than its own; plans, limits and accounts are the operator\'s (`npx petstore accounts …`).',
  },
)
export type NewApiKey = Static<typeof NewApiKey>

export const ApiKeyPatch = Type.Object(
  {
    name: Type.Optional(Name),
    scopes: Type.Optional(scopeOrPresetList('They replace the key\'s scopes. ')),
    enabled: Type.Optional(Type.Boolean({ description: 'false disables the key (401 until enabled again); true enables it, unless the operator disabled it (`petstore keys disable`): that one the operator alone enables (403 `forbidden`).' })),
  },
  { $id: 'ApiKeyPatch', additionalProperties: false, minProperties: 1, description: 'The fields to change (a merge patch); the others are kept. The plan and limits are the account\'s, set by the operator.' },
)
export type ApiKeyPatch = Static<typeof ApiKeyPatch>

export const ApiKeyWithSecret = Type.Object(
  {
    key: Type.Optional(
      Type.String({ description: 'The secret: shown in this response only, and in its Idempotency-Key replays (for 24 hours it is kept sealed with the key\'s record); absent only from a replay of a create made before the service kept it (within a day of that upgrade). Store it now; the service keeps only its hash.' }),
    ),
    apiKey: ApiKey,
  },
  { $id: 'ApiKeyWithSecret', additionalProperties: false, description: 'A new key, with its secret.' },
)
export type ApiKeyWithSecret = Static<typeof ApiKeyWithSecret>

const Window = (name: string) =>
  Type.Object(
    {
      limit: Type.Integer({ description: `Requests allowed per ${name}.` }),
      remaining: Type.Integer({ minimum: 0, description: 'Requests left in this window.' }),
      reset: Type.Integer({ description: 'Unix time (seconds) at which this window ends.' }),
      used: Type.Integer({ minimum: 0, description: 'Requests counted in this window.' }),
    },
    { additionalProperties: false },
  )

/** The calling key as GET /v1/account shows it: its own record, which it may read without `keys:read`. */
const CallingKey = Type.Object(
  {
    id: ApiKey.properties.id,
    name: ApiKey.properties.name,
    prefix: ApiKey.properties.prefix,
    scopes: ApiKey.properties.scopes,
    createdAt: ApiKey.properties.createdAt,
    expiresAt: ApiKey.properties.expiresAt,
  },
  {
    additionalProperties: false,
    description: 'The key that made this request: its scopes say what it may do here (an operation needing another scope answers 403 `insufficient_scope`), `expiresAt` until when. Any valid key reads its own; other keys need `keys:read` (`GET /v1/keys`).',
  },
)

export const Account = Type.Object(
  {
    id: id('Identifier of the account.'),
    name: Name,
    plan: PlanSchema,
    limits: AccountLimits,
    status: Type.Unsafe<'active' | 'disabled'>({ type: 'string', enum: ['active', 'disabled'], description: '`disabled`: every key of the account is refused.' }),
    createdAt: timestamp('When the account was made.'),
    disabledAt: nullableTimestamp('When the account was disabled.'),
    keyCount: Type.Integer({ minimum: 0, description: 'Keys of the account, revoked ones included.' }),
    callingKey: CallingKey,
  },
  { $id: 'Account', additionalProperties: false, description: 'An account: it owns its keys and everything they make (orders, webhook endpoints, events, usage), and its plan\'s limits are shared by all its keys.' },
)
export type Account = Static<typeof Account>

export const Usage = Type.Object(
  {
    minute: Window('UTC minute'),
    day: Window('UTC day'),
    bannedUntil: nullableTimestamp('When the key\'s ban ends; null when not banned. (A banned key is answered 429 `key_banned` instead: this is set only when the ban began while the request was answered.)'),
  },
  { $id: 'Usage', additionalProperties: false, description: 'The rate-limit windows of the caller\'s account (all its keys together) as they stand, and the calling key\'s ban (as GitHub\'s GET /rate_limit).' },
)
export type Usage = Static<typeof Usage>

const count = (description: string) => Type.Integer({ minimum: 0, description })

export const UsageBucket = Type.Object(
  {
    start: timestamp('The start of the hour or UTC day.'),
    ok: count('Requests answered: 2xx, 3xx, and 4xx other than those below.'),
    rate_limited: count('Refused with 429 rate_limited.'),
    banned: count('Refused with 429 key_banned.'),
    forbidden: count('Refused with 403 insufficient_scope.'),
    error: count('Answered with a 5xx.'),
  },
  { $id: 'UsageBucket', additionalProperties: false, description: `Requests of one key in one hour or day, by outcome (${USAGE_OUTCOMES.join(', ')}).` },
)
export type UsageBucket = Static<typeof UsageBucket>
