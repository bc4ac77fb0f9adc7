// `petstore keys …`: the key lifecycle from the server's shell, on the same service
// layer as the admin API (api-keys/key-admin.ts); what it shares with `petstore
// accounts …` is in admin.ts.
import type { KeyView } from '../api-keys/key-admin.js'
import { DAY_MS, type UsageBucketCounts } from '../usage/buckets.js'
import { usageHistory } from '../usage/history.js'
import { systemClock } from '../clock.js'
import { USAGE_OUTCOMES } from '../vocabulary/usage.js'
import { accountId, allKeys, fieldList, json, keyFlags, keyId, keyInput, keyStatus, keyTable, limitFlags, limitsOf, limitsText, noSuchAccount, noSuchKey, PLAN_LIST, withAdmin } from './admin.js'
import { DAYS_FLAG, duration, historyDays } from './arguments.js'
import { CliError, CommandFailed } from './cli-error.js'
import { defineCommand } from './command.js'
import { printable, printableJson } from './io.js'

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
          limits: limitsOf(values),
        })
        if (values.json) context.io.out(printableJson({ key: secret, ...key }))
        else {
          context.io.out(secret)
          context.io.out(`Created key ${key.id} in account ${key.accountId} (${printable(key.name)}, plan ${key.plan}: ${limitsText(key)}; ${key.scopes.join(' ')}${key.expiresAt ? `; expires ${key.expiresAt}` : ''}). It is shown only this once.`)
        }
        return 0
      }),
  }),

  defineCommand({
    name: 'keys list',
    summary: 'List the keys with their account, status, scopes, expiry and maker (never their secrets)',
    flags: { account: { value: 'ID', description: 'only this account\'s keys' }, json },
    run: ({ values }, context) =>
      withAdmin(context, async ({ admin, accounts, where }) => {
        const account = values.account === undefined ? undefined : accountId(values.account)
        if (account !== undefined && !(await accounts.get(account))) throw noSuchAccount(values.account!, where)
        const keys = await allKeys(admin, account)
        if (values.json) context.io.out(printableJson(keys))
        else if (keys.length === 0) context.io.out('No keys yet: create one with "petstore keys create --plan free".')
        else context.io.out(keyTable(keys))
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
        context.io.out(values.json ? printableJson(key) : details(key))
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
        const key = await admin.find(keyId(id))
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
        if (values.json) context.io.out(printableJson({ key: rolled.secret, ...rolled.key }))
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
    flags: { days: DAYS_FLAG, hourly: { description: 'a row per hour instead of per day' }, json },
    run: ({ values, args: [id] }, context) =>
      withAdmin(context, async ({ admin, store, where }) => {
        const key = await admin.find(keyId(id))
        if (!key) throw noSuchKey(id, where)
        const days = historyDays(values.days)
        const now = systemClock.now()
        const range = { from: now - days * DAY_MS, granularity: values.hourly ? 'hour' : 'day' } as const
        const list = await usageHistory(store.usage.history, { accountId: key.accountId, keyId: key.id }, range, now)
        if (values.json) context.io.out(printableJson(list))
        else if (list.length === 0) context.io.out(`No requests from key ${id} in the last ${days} days.`)
        else context.io.out(usageTable(list, values.hourly))
        return 0
      }),
  }),
]


function aligned(table: string[][], right: ReadonlySet<number> = new Set()): string {
  const rows = table.map((row) => row.map(printable))
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
  return rows.map((row) => row.map((cell, i) => (right.has(i) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n')
}

/** Buckets as a table a person reads at a glance: a row per day (or hour), a column per outcome and the total. */
export function usageTable(list: readonly UsageBucketCounts[], hourly: boolean): string {
  const head = [hourly ? 'HOUR (UTC)' : 'DAY (UTC)', 'OK', 'RATE LIMITED', 'BANNED', 'FORBIDDEN', 'ERROR', 'TOTAL']
  const rows = list.map((bucket) => {
    const counts = USAGE_OUTCOMES.map((outcome) => bucket[outcome])
    const start = bucket.start
    return [hourly ? `${start.slice(0, 13).replace('T', ' ')}:00` : start.slice(0, 10), ...counts.map(String), String(counts.reduce((a, b) => a + b, 0))]
  })
  return aligned([head, ...rows], new Set([1, 2, 3, 4, 5, 6]))
}

function details(key: KeyView): string {
  const fields: [string, string][] = [
    ['id', String(key.id)],
    ['account', String(key.accountId)],
    ['name', key.name],
    ['prefix', `${key.prefix}…`],
    ['plan', `${key.plan} (${limitsText(key)})`],
    ['status', keyStatus(key)],
    ['scopes', key.scopes.join(' ') || 'none'],
    ['created', key.createdAt],
    ['expires', key.expiresAt ?? 'never'],
    ['last used', key.lastUsedAt ?? 'never'],
    ['made by', key.createdBy === null ? 'the operator' : `key ${key.createdBy}`],
  ]
  if (key.replacedBy !== null) fields.push(['rolled to', `key ${key.replacedBy}`])
  return fieldList(fields)
}
