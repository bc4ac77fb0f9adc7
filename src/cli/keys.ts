// `petstore keys …` and `petstore accounts …`: keys and accounts from the server's
// shell, on the same service layer as the admin API (api-keys/key-admin.ts and
// account-admin.ts), in the store DATABASE_URL names (by default the project's
// data/petstore.db, wherever the command runs). Each command names on stderr the
// database it used. The operator here is not limited by a key's own scopes: the first
// key with keys:write is made here, and plans, limits and accounts are set only here.
import { createAccountAdmin, type AccountAdmin, type AccountView } from '../api-keys/account-admin.js'
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
  accounts: AccountAdmin
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
    const accounts = createAccountAdmin({ accounts: store.accounts, keyAdmin: admin, clock: systemClock })
    const code = await run({ admin, accounts, store, config, where })
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
const noSuchAccount = (id: string, where: string) => new CommandFailed(`there is no account with id ${id} in ${where} ("petstore accounts list" shows them)`)
const keyFlags = {
  name: { value: 'NAME', description: 'a label for people' },
  scopes: { value: 'SCOPES', description: `all (the default: every scope but keys:*), read_only, or a comma list of ${SCOPES.join(', ')}` },
  'expires-in': { value: 'DURATION', description: 'the key stops working after this long: 30d, 12h… (at most 366d)' },
} as const

export const keysCommands = [
  defineCommand({
    name: 'keys create',
    summary: 'Create an API key (--plan: in a new account; --account: in that one); prints the key alone on the first line, the only time it is shown',
    flags: {
      plan: { value: 'PLAN', description: `${PLAN_LIST}: makes an account on this plan, with this key as its first` },
      account: { value: 'ID', description: 'adds the key to this account instead (its plan and limits)' },
      ...keyFlags,
      ...limitFlags,
      json,
    },
    run: ({ values }, context) =>
      withAdmin(context, async ({ admin, accounts, where }) => {
        if (values.plan !== undefined && values.account !== undefined) throw new CliError('give --plan PLAN (a new account) or --account ID (an existing one), not both')
        if (values.plan === undefined && values.account === undefined) throw new CliError('give --plan PLAN (a new account with this key) or --account ID (a key for an existing account)')
        if (values.account !== undefined && !(await accounts.get(accountId(values.account)))) throw noSuchAccount(values.account, where)
        const { secret, key } = await admin.create({
          ...(values.plan === undefined ? {} : { plan: values.plan }),
          ...(values.account === undefined ? {} : { accountId: accountId(values.account) }),
          ...keyInput(values),
          limits: { perMinute: count(values['per-minute'], '--per-minute'), perDay: count(values['per-day'], '--per-day') },
        })
        if (values.json) context.io.out(JSON.stringify({ key: secret, ...key }, null, 2))
        else {
          context.io.out(secret)
          context.io.out(`Created key ${key.id} in account ${key.accountId} (${key.name}, plan ${key.plan}: ${limitsText(key)}; ${key.scopes.join(' ')}${key.expiresAt ? `; expires ${key.expiresAt}` : ''}). It is shown only this once.`)
        }
        return 0
      }),
  }),

  defineCommand({
    name: 'keys list',
    summary: 'List the keys with their account, status, scopes, expiry and maker (never their secrets)',
    flags: { account: { value: 'ID', description: 'only this account\'s keys' }, json },
    run: ({ values }, context) =>
      withAdmin(context, async ({ admin }) => {
        const account = values.account === undefined ? undefined : accountId(values.account)
        const keys = await allKeys(admin, account)
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
    summary: 'Revoke a key for good (--cascade: and every key it made, however deep); running servers refuse it within 5 seconds',
    flags: { cascade: { description: 'also revoke every key this key made, and every key those made' } },
    run: ({ values, args: [id] }, context) =>
      withAdmin(context, async ({ admin, where }) => {
        const result = await admin.revoke(keyId(id), undefined, values.cascade === true)
        if (!result) throw noSuchKey(id, where)
        const others = result.revoked.filter((revoked) => revoked !== keyId(id))
        if (result.revoked.length === 0) context.io.out(`Key ${id} was already revoked (${result.key.revokedAt}).`)
        else context.io.out(`Revoked key ${id}${others.length > 0 ? ` and the keys it made: ${others.join(', ')}; running servers refuse them` : '; running servers refuse it'} within 5 seconds.`)
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
    summary: "Change the plan of a key's account (all its keys); running servers apply it within 5 seconds",
    flags: limitFlags,
    run: ({ values, args: [id, plan] }, context) =>
      withAdmin(context, async ({ admin, accounts, where }) => {
        const key = await admin.get(keyId(id))
        if (!key) throw noSuchKey(id, where)
        const account = await accounts.setPlan(key.accountId, plan!, limitsOf(values))
        context.io.out(`Account ${key.accountId} of key ${id} is now on the ${account!.plan} plan (${limitsText(account!)}), for all its keys; running servers apply it within 5 seconds.`)
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
        const key = (await admin.get(keyId(id)))!
        const rows = await store.usage.history({ accountId: key.accountId, keyId: key.id }, from - (from % size), now)
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
  const rows = [['ID', 'ACCOUNT', 'PREFIX', 'PLAN', 'STATUS', 'EXPIRES', 'LAST USED', 'MADE BY', 'SCOPES', 'NAME']]
  for (const key of keys) {
    rows.push([
      String(key.id),
      String(key.accountId),
      `${key.prefix}…`,
      key.plan,
      status(key),
      key.expiresAt ?? '-',
      key.lastUsedAt ?? '-',
      key.createdBy === null ? 'operator' : `key ${key.createdBy}`,
      key.scopes.join(',') || '-',
      key.name,
    ])
  }
  return rows.map((row) => row.join('\t')).join('\n')
}

async function allKeys(admin: KeyAdmin, account?: number): Promise<KeyView[]> {
  const keys: KeyView[] = []
  for (let page = await admin.page(0, 100, undefined, account); page.length > 0; page = await admin.page(page.at(-1)!.id, 100, undefined, account)) keys.push(...page)
  return keys
}

function details(key: KeyView): string {
  const fields: [string, string][] = [
    ['id', String(key.id)],
    ['account', String(key.accountId)],
    ['name', key.name],
    ['prefix', `${key.prefix}…`],
    ['plan', `${key.plan} (${limitsText(key)})`],
    ['status', status(key)],
    ['scopes', key.scopes.join(' ') || 'none'],
    ['created', key.createdAt],
    ['expires', key.expiresAt ?? 'never'],
    ['last used', key.lastUsedAt ?? 'never'],
  ]
  fields.push(['made by', key.createdBy === null ? 'the operator' : `key ${key.createdBy}`])
  if (key.replacedBy !== null) fields.push(['rolled to', `key ${key.replacedBy}`])
  return fields.map(([name, value]) => `${name.padEnd(11)}${value}`).join('\n')
}

function status(key: KeyView): string {
  if (key.status === 'banned') return `banned until ${key.bannedUntil}`
  if (key.status === 'revoked') return `revoked ${key.revokedAt}`
  return key.status
}

function limitsText(holder: { limits: { perMinute: number; perDay: number } }): string {
  return `${holder.limits.perMinute}/min, ${holder.limits.perDay}/day`
}

function limitsOf(values: { 'per-minute'?: string | boolean; 'per-day'?: string | boolean }) {
  const perMinute = count(values['per-minute'] as string | undefined, '--per-minute')
  const perDay = count(values['per-day'] as string | undefined, '--per-day')
  return { ...(perMinute === undefined ? {} : { perMinute }), ...(perDay === undefined ? {} : { perDay }) }
}

function keyInput(values: { name?: string | boolean; scopes?: string | boolean; 'expires-in'?: string | boolean }) {
  const name = values.name as string | undefined
  const given = values.scopes as string | undefined
  const expiresIn = values['expires-in'] as string | undefined
  return {
    ...(name === undefined ? {} : { name }),
    ...(given === undefined ? {} : { scopes: scopes(given) }),
    ...(expiresIn === undefined ? {} : { expiresInMs: duration(expiresIn, '--expires-in') }),
  }
}

function accountId(raw: string): number {
  return positiveInteger(raw, 'account ID', ' (the id "petstore accounts list" shows)')
}

function accountTable(accounts: AccountView[]): string {
  const rows = [['ID', 'PLAN', 'PER MIN', 'PER DAY', 'STATUS', 'KEYS', 'CREATED', 'NAME']]
  for (const account of accounts) {
    rows.push([String(account.id), account.plan, String(account.limits.perMinute), String(account.limits.perDay), account.status, String(account.keyCount), account.createdAt, account.name])
  }
  return rows.map((row) => row.join('\t')).join('\n')
}

function accountDetails(account: AccountView): string {
  const fields: [string, string][] = [
    ['id', String(account.id)],
    ['name', account.name],
    ['plan', `${account.plan} (${limitsText(account)}, shared by its keys)`],
    ['status', account.disabledAt === null ? 'active' : `disabled ${account.disabledAt}`],
    ['created', account.createdAt],
    ['keys', String(account.keyCount)],
  ]
  return fields.map(([name, value]) => `${name.padEnd(11)}${value}`).join('\n')
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

export const accountsCommands = [
  defineCommand({
    name: 'accounts create',
    summary: 'Create an account and its first key; prints the key alone on the first line, the only time it is shown',
    flags: { plan: { value: 'PLAN', description: PLAN_LIST, required: true }, ...keyFlags, ...limitFlags, json },
    run: ({ values }, context) =>
      withAdmin(context, async ({ accounts }) => {
        const { account, secret, key } = await accounts.create({ plan: values.plan, ...keyInput(values), limits: limitsOf(values) })
        if (values.json) context.io.out(JSON.stringify({ account, key: secret, apiKey: key }, null, 2))
        else {
          context.io.out(secret)
          context.io.out(`Created account ${account.id} (${account.name}, plan ${account.plan}: ${limitsText(account)}) with key ${key.id}. The key is shown only this once.`)
        }
        return 0
      }),
  }),

  defineCommand({
    name: 'accounts list',
    summary: 'List the accounts with their plan, limits, status and number of keys',
    flags: { json },
    run: ({ values }, context) =>
      withAdmin(context, async ({ accounts }) => {
        const list: AccountView[] = []
        for (let page = await accounts.page(0, 100); page.length > 0; page = await accounts.page(page.at(-1)!.id, 100)) list.push(...page)
        if (values.json) context.io.out(JSON.stringify(list, null, 2))
        else if (list.length === 0) context.io.out('No accounts yet: create one with "petstore accounts create --plan free".')
        else context.io.out(accountTable(list))
        return 0
      }),
  }),

  defineCommand({
    name: 'accounts show',
    args: ['ID'],
    summary: 'Print one account: its plan, its keys and its usage today',
    flags: { json },
    run: ({ values, args: [id] }, context) =>
      withAdmin(context, async ({ admin, accounts, store, where }) => {
        const account = await accounts.get(accountId(id))
        if (!account) throw noSuchAccount(id, where)
        const keys = await allKeys(admin, account.id)
        const now = systemClock.now()
        const today = bucketsOf(await store.usage.history({ accountId: account.id }, now - (now % DAY_MS), now), DAY_MS)[0]
        const usageToday = Object.fromEntries(USAGE_OUTCOMES.map((outcome) => [outcome, today?.[outcome] ?? 0]))
        if (values.json) context.io.out(JSON.stringify({ ...account, keys, usageToday }, null, 2))
        else {
          context.io.out(accountDetails(account))
          context.io.out(`today      ${USAGE_OUTCOMES.map((outcome) => `${outcome} ${usageToday[outcome]}`).join(', ')}`)
          context.io.out('')
          context.io.out(keys.length === 0 ? 'No keys.' : table(keys))
        }
        return 0
      }),
  }),

  defineCommand({
    name: 'accounts set-plan',
    args: ['ID', 'PLAN'],
    summary: "Change an account's plan (all its keys share it); running servers apply it within 5 seconds",
    flags: limitFlags,
    run: ({ values, args: [id, plan] }, context) =>
      withAdmin(context, async ({ accounts, where }) => {
        const account = await accounts.setPlan(accountId(id), plan!, limitsOf(values))
        if (!account) throw noSuchAccount(id, where)
        context.io.out(`Account ${id} is now on the ${account.plan} plan (${limitsText(account)}); running servers apply it within 5 seconds.`)
        return 0
      }),
  }),

  ...(['disable', 'enable'] as const).map((verb) =>
    defineCommand({
      name: `accounts ${verb}`,
      args: ['ID'],
      summary: verb === 'disable' ? 'Disable an account: every key of it answers 401 until enabled again (within 5 seconds)' : 'Enable a disabled account again',
      run: ({ args: [id] }, context) =>
        withAdmin(context, async ({ accounts, where }) => {
          const account = await accounts.setEnabled(accountId(id), verb === 'enable')
          if (!account) throw noSuchAccount(id, where)
          context.io.out(`Account ${id} is ${account.status}.`)
          return 0
        }),
    }),
  ),
]
