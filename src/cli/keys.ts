// `petstore keys …`: the key lifecycle from the server's shell, on the same service
// layer as the admin API (api-keys/key-admin.ts), in the store DATABASE_URL names (by
// default the project's data/petstore.db, wherever the command runs). Each command
// names on stderr the database it used. An operator here is not limited by a key's
// own scopes: the first key with keys:write is made here.
import { createKeyAdmin, KeyAdminError, type KeyAdmin, type KeyView } from '../api-keys/key-admin.js'
import { keyEnvironmentFor } from '../api-keys/key-format.js'
import { PLANS } from '../api-keys/plans.js'
import { parseScopes, ScopeError, SCOPES } from '../api-keys/scopes.js'
import { bucketsOf, DAY_MS, HOUR_MS, type UsageBucketCounts } from '../api-keys/usage-buckets.js'
import { systemClock } from '../clock.js'
import { loadConfig, redactUrl, type Config } from '../config.js'
import { openStoreFromConfig } from '../db/from-config.js'
import type { Store } from '../db/store.js'
import { USAGE_OUTCOMES } from '../db/usage-store.js'
import { createRateLimiterFromConfig } from '../rate-limit/from-config.js'
import { duration, positiveInteger } from './arguments.js'
import { CliError, CommandFailed } from './cli-error.js'
import { defineCommand, type Context } from './command.js'

const PLAN_LIST = `${PLANS.slice(0, -1).join(', ')} or ${PLANS.at(-1)}`
const limitFlags = {
  'per-minute': { value: 'N', description: 'requests per minute (enterprise plan only, with --per-day)' },
  'per-day': { value: 'N', description: 'requests per day (enterprise plan only, with --per-minute)' },
} as const
const json = { description: 'print JSON instead of text' } as const

interface Admin {
  admin: KeyAdmin
  store: Store
  config: Config
  /** The database, for messages (never its password). */
  where: string
}

/** Runs `run` with the key service on the store of DATABASE_URL (and Redis, for bans, when REDIS_URL is set), then names the store on stderr. */
async function withAdmin(context: Context, run: (admin: Admin) => Promise<number>): Promise<number> {
  const config = loadConfig(context.env)
  const where = redactUrl(config.databaseUrl)
  const store = await openStoreFromConfig(config)
  const limiter = createRateLimiterFromConfig(config, systemClock, { onRedisTransition: () => {} })
  try {
    await limiter.ready()
    const admin = createKeyAdmin({ apiKeys: store.apiKeys, limiter, clock: systemClock, environment: keyEnvironmentFor(config.environment) })
    const code = await run({ admin, store, config, where })
    context.io.err(`petstore: database ${where}`)
    return code
  } catch (error) {
    if (error instanceof KeyAdminError) throw new CliError(error.message)
    throw error
  } finally {
    await limiter.close()
    await store.close()
  }
}

const noSuchKey = (id: string, where: string) => new CommandFailed(`there is no key with id ${id} in ${where}`)

export const keysCommands = [
  defineCommand({
    name: 'keys create',
    summary: 'Create an API key; prints the key alone on the first line, the only time it is shown',
    flags: {
      plan: { value: 'PLAN', description: PLAN_LIST, required: true },
      name: { value: 'NAME', description: 'a label for people ("<plan> key" if not given)' },
      ...limitFlags,
      scopes: { value: 'SCOPES', description: `all (the default: every scope but keys:*), read_only, or a comma list of ${SCOPES.join(', ')}` },
      'expires-in': { value: 'DURATION', description: 'the key stops working after this long: 30d, 12h… (at most 366d)' },
      json,
    },
    run: ({ values }, context) =>
      withAdmin(context, async ({ admin }) => {
        const { secret, key } = await admin.create({
          plan: values.plan,
          ...(values.name === undefined ? {} : { name: values.name }),
          limits: { perMinute: count(values['per-minute'], '--per-minute'), perDay: count(values['per-day'], '--per-day') },
          ...(values.scopes === undefined ? {} : { scopes: scopes(values.scopes) }),
          ...(values['expires-in'] === undefined ? {} : { expiresInMs: duration(values['expires-in'], '--expires-in') }),
        })
        if (values.json) context.io.out(JSON.stringify({ key: secret, ...key }, null, 2))
        else {
          context.io.out(secret)
          context.io.out(`Created key ${key.id} (${key.name}, plan ${key.plan}: ${limitsText(key)}; ${key.scopes.join(' ')}${key.expiresAt ? `; expires ${key.expiresAt}` : ''}). It is shown only this once.`)
        }
        return 0
      }),
  }),

  defineCommand({
    name: 'keys list',
    summary: 'List the keys with their status, scopes and expiry (never their secrets)',
    flags: { json },
    run: ({ values }, context) =>
      withAdmin(context, async ({ admin }) => {
        const keys: KeyView[] = []
        for (let page = await admin.page(0, 100); page.length > 0; page = await admin.page(page.at(-1)!.id, 100)) keys.push(...page)
        if (values.json) context.io.out(JSON.stringify(keys, null, 2))
        else if (keys.length === 0) context.io.out('No keys yet: create one with "petstore keys create --plan free".')
        else context.io.out(table(keys))
        return 0
      }),
  }),

  defineCommand({
    name: 'keys show',
    args: ['ID'],
    summary: 'Print one key (never its secret)',
    flags: { json },
    run: ({ values, args: [id] }, context) =>
      withAdmin(context, async ({ admin, where }) => {
        const key = await admin.get(keyId(id))
        if (!key) throw noSuchKey(id, where)
        context.io.out(values.json ? JSON.stringify(key, null, 2) : details(key))
        return 0
      }),
  }),

  defineCommand({
    name: 'keys revoke',
    args: ['ID'],
    summary: 'Revoke a key for good; running servers refuse it within 5 seconds',
    run: ({ args: [id] }, context) =>
      withAdmin(context, async ({ admin, where }) => {
        if (!(await admin.revoke(keyId(id)))) throw noSuchKey(id, where)
        context.io.out(`Revoked key ${id}; running servers refuse it within 5 seconds.`)
        return 0
      }),
  }),

  ...(['disable', 'enable'] as const).map((verb) =>
    defineCommand({
      name: `keys ${verb}`,
      args: ['ID'],
      summary: verb === 'disable' ? 'Disable a key (401 until enabled again); running servers apply it within 5 seconds' : 'Enable a disabled key again',
      run: ({ args: [id] }, context) =>
        withAdmin(context, async ({ admin, where }) => {
          const key = await admin.update(keyId(id), { enabled: verb === 'enable' })
          if (!key) throw noSuchKey(id, where)
          context.io.out(`Key ${id} is ${key.status}.`)
          return 0
        }),
    }),
  ),

  defineCommand({
    name: 'keys set-plan',
    args: ['ID', 'PLAN'],
    summary: "Change a key's plan; running servers apply it within 5 seconds",
    flags: limitFlags,
    run: ({ values, args: [id, plan] }, context) =>
      withAdmin(context, async ({ admin, where }) => {
        const key = await admin.update(keyId(id), { plan, limits: { perMinute: count(values['per-minute'], '--per-minute'), perDay: count(values['per-day'], '--per-day') } })
        if (!key) throw noSuchKey(id, where)
        context.io.out(`Key ${id} is now on the ${key.plan} plan (${limitsText(key)}); running servers apply it within 5 seconds.`)
        return 0
      }),
  }),

  defineCommand({
    name: 'keys roll',
    args: ['ID'],
    summary: 'Make a new key with the same settings; prints it alone on the first line. The old one works for the grace period',
    flags: { grace: { value: 'DURATION', description: 'how long the old key keeps working: 0 (stops now) to 7d; default 24h' }, json },
    run: ({ values, args: [id] }, context) =>
      withAdmin(context, async ({ admin, where }) => {
        const rolled = await admin.roll(keyId(id), values.grace === undefined ? 86_400_000 : duration(values.grace, '--grace'))
        if (!rolled) throw new CommandFailed(`there is no key with id ${id} that can be rolled (it may be revoked) in ${where}`)
        if (values.json) context.io.out(JSON.stringify({ key: rolled.secret, ...rolled.key }, null, 2))
        else {
          context.io.out(rolled.secret)
          context.io.out(`Created key ${rolled.key.id} in place of key ${id}, which works until ${rolled.old.expiresAt}. The new key is shown only this once.`)
        }
        return 0
      }),
  }),

  defineCommand({
    name: 'keys unban',
    args: ['ID'],
    summary: "Lift a key's ban for repeated requests while rate limited",
    run: ({ args: [id] }, context) =>
      withAdmin(context, async ({ admin, config, where }) => {
        // Without Redis the ban lives in the memory of the running server, out of this process's reach.
        if (!config.redisUrl) throw new CommandFailed(`without REDIS_URL a ban lives in the running server's memory: lift it with POST /v1/keys/${id}/unban (a key with keys:write), or restart the server`)
        const result = await admin.unban(keyId(id))
        if (!result) throw noSuchKey(id, where)
        context.io.out(result.lifted ? `Key ${id} is no longer banned.` : `Key ${id} was not banned.`)
        return 0
      }),
  }),

  defineCommand({
    name: 'keys usage',
    args: ['ID'],
    summary: "Print a key's requests per day (or hour) and outcome",
    flags: { days: { value: 'N', description: 'how many days back, 1 to 90 (default 7)' }, hourly: { description: 'a row per hour instead of per day' }, json },
    run: ({ values, args: [id] }, context) =>
      withAdmin(context, async ({ admin, store, where }) => {
        if (!(await admin.get(keyId(id)))) throw noSuchKey(id, where)
        const days = values.days === undefined ? 7 : positiveInteger(values.days, '--days')
        if (days > 90) throw new CliError('--days must be at most 90: usage is kept 90 days')
        const size = values.hourly ? HOUR_MS : DAY_MS
        const now = systemClock.now()
        const from = now - days * DAY_MS
        const rows = await store.usage.history(keyId(id), from - (from % size), now)
        const list = bucketsOf(rows, size)
        if (values.json) context.io.out(JSON.stringify(list, null, 2))
        else if (list.length === 0) context.io.out(`No requests from key ${id} in the last ${days} days.`)
        else context.io.out(usageTable(list, values.hourly))
        return 0
      }),
  }),
]

/** Columns padded to their widest cell, for a person to read at a glance. */
function aligned(rows: string[][], right: ReadonlySet<number> = new Set()): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
  return rows.map((row) => row.map((cell, i) => (right.has(i) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n')
}

function usageTable(list: UsageBucketCounts[], hourly: boolean): string {
  const head = [hourly ? 'HOUR (UTC)' : 'DAY (UTC)', 'OK', 'RATE LIMITED', 'BANNED', 'FORBIDDEN', 'ERROR', 'TOTAL']
  const rows = list.map((bucket) => {
    const counts = USAGE_OUTCOMES.map((outcome) => bucket[outcome])
    const start = bucket.start
    return [hourly ? `${start.slice(0, 13).replace('T', ' ')}:00` : start.slice(0, 10), ...counts.map(String), String(counts.reduce((a, b) => a + b, 0))]
  })
  return aligned([head, ...rows], new Set([1, 2, 3, 4, 5, 6]))
}

function table(keys: KeyView[]): string {
  const rows = [['ID', 'PREFIX', 'PLAN', 'PER MIN', 'PER DAY', 'STATUS', 'EXPIRES', 'LAST USED', 'SCOPES', 'NAME']]
  for (const key of keys) {
    rows.push([
      String(key.id),
      `${key.prefix}…`,
      key.plan,
      String(key.limits.perMinute),
      String(key.limits.perDay),
      status(key),
      key.expiresAt ?? '-',
      key.lastUsedAt ?? '-',
      key.scopes.join(',') || '-',
      key.name,
    ])
  }
  return rows.map((row) => row.join('\t')).join('\n')
}

function details(key: KeyView): string {
  const fields: [string, string][] = [
    ['id', String(key.id)],
    ['name', key.name],
    ['prefix', `${key.prefix}…`],
    ['plan', `${key.plan} (${limitsText(key)})`],
    ['status', status(key)],
    ['scopes', key.scopes.join(' ') || 'none'],
    ['created', key.createdAt],
    ['expires', key.expiresAt ?? 'never'],
    ['last used', key.lastUsedAt ?? 'never'],
  ]
  if (key.replacedBy !== null) fields.push(['rolled to', `key ${key.replacedBy}`])
  return fields.map(([name, value]) => `${name.padEnd(11)}${value}`).join('\n')
}

function status(key: KeyView): string {
  if (key.status === 'banned') return `banned until ${key.bannedUntil}`
  if (key.status === 'revoked') return `revoked ${key.revokedAt}`
  return key.status
}

function limitsText(key: KeyView): string {
  return `${key.limits.perMinute}/min, ${key.limits.perDay}/day`
}

function scopes(text: string) {
  try {
    return parseScopes(text)
  } catch (error) {
    if (error instanceof ScopeError) throw new CliError(`--scopes: ${error.message}`)
    throw error
  }
}

function count(value: string | undefined, flag: string): number | undefined {
  return value === undefined ? undefined : positiveInteger(value, flag)
}

function keyId(raw: string): number {
  return positiveInteger(raw, 'ID', ' (the id "petstore keys list" shows)')
}
