// `petstore accounts …`: accounts from the server's shell (api-keys/account-admin.ts).
// An account owns its keys and what they make, and its plan's limits are shared by all
// its keys; only the operator makes and changes accounts.
import type { AccountView } from '../api-keys/account-admin.js'
import { usageHistory } from '../usage/history.js'
import { systemClock } from '../clock.js'
import { USAGE_OUTCOMES } from '../vocabulary/usage.js'
import { accountId, allKeys, fieldList, json, keyFlags, keyInput, keyTable, limitFlags, limitsOf, limitsText, noSuchAccount, PLAN_LIST, tabbed, withAdmin } from './admin.js'
import { defineCommand } from './command.js'
import { printable, printableJson } from './io.js'

export const accountsCommands = [
  defineCommand({
    name: 'accounts create',
    summary: 'Create an account and its first key; prints the key alone on the first line, the only time it is shown',
    flags: { plan: { value: 'PLAN', description: PLAN_LIST, required: true }, ...keyFlags, ...limitFlags, json },
    run: ({ values }, context) =>
      withAdmin(context, async ({ accounts }) => {
        const { account, secret, key } = await accounts.create({ plan: values.plan, ...keyInput(values), limits: limitsOf(values) })
        if (values.json) context.io.out(printableJson({ account, key: secret, apiKey: key }))
        else {
          context.io.out(secret)
          context.io.out(`Created account ${account.id} (${printable(account.name)}, plan ${account.plan}: ${limitsText(account)}) with key ${key.id}. The key is shown only this once.`)
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
        if (values.json) context.io.out(printableJson(list))
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
        const [today] = await usageHistory(store.usage.history, { accountId: account.id }, { from: now, to: now + 1, granularity: 'day' }, now)
        const usageToday = Object.fromEntries(USAGE_OUTCOMES.map((outcome) => [outcome, today?.[outcome] ?? 0]))
        if (values.json) context.io.out(printableJson({ ...account, keys, usageToday }))
        else {
          context.io.out(accountDetails(account))
          context.io.out(`today      ${USAGE_OUTCOMES.map((outcome) => `${outcome} ${usageToday[outcome]}`).join(', ')}`)
          context.io.out('')
          context.io.out(keys.length === 0 ? 'No keys.' : keyTable(keys))
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

function accountTable(accounts: AccountView[]): string {
  const head = ['ID', 'PLAN', 'PER MIN', 'PER DAY', 'STATUS', 'KEYS', 'CREATED', 'NAME']
  const rows = accounts.map((account) => [String(account.id), account.plan, String(account.limits.perMinute), String(account.limits.perDay), account.status, String(account.keyCount), account.createdAt, account.name])
  return tabbed([head, ...rows])
}

function accountDetails(account: AccountView): string {
  return fieldList([
    ['id', String(account.id)],
    ['name', account.name],
    ['plan', `${account.plan} (${limitsText(account)}, shared by its keys)`],
    ['status', account.disabledAt === null ? 'active' : `disabled ${account.disabledAt}`],
    ['created', account.createdAt],
    ['keys', String(account.keyCount)],
  ])
}
