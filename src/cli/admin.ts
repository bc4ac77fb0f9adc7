// What `petstore keys …` and `petstore accounts …` share: the service layer on the
// store DATABASE_URL names (by default the project's data/petstore.db, wherever the
// command runs), their flags, and how they print keys. Each command names on stderr
// the database it used. The operator here is not limited by a key's own scopes: the
// first key with keys:write is made here, and plans, limits and accounts are set only here.
import { createAccountAdmin, type AccountAdmin } from '../api-keys/account-admin.js'
import { createKeyAdmin, KeyAdminError, KeyStateConflict, type KeyAdmin, type KeyView } from '../api-keys/key-admin.js'
import { keyEnvironmentFor } from '../api-keys/key-format.js'
import { PlanError, PLANS, type Limits } from '../vocabulary/plans.js'
import { parseScopes, ScopeError, SCOPES, type Scope } from '../vocabulary/scopes.js'
import { systemClock } from '../clock.js'
import { loadConfig, redactUrl, type Config } from '../config.js'
import { openStoreFromConfig } from '../db/from-config.js'
import type { Store } from '../db/store.js'
import { createRateLimiterFromConfig } from '../rate-limit/from-config.js'
import { duration, positiveInteger } from './arguments.js'
import { CliError, CommandFailed } from './cli-error.js'
import type { Context } from './command.js'
import { printable } from './io.js'

export const PLAN_LIST = `${PLANS.slice(0, -1).join(', ')} or ${PLANS.at(-1)}`
export const limitFlags = {
  'per-minute': { value: 'N', description: 'requests per minute (enterprise plan only, with --per-day)' },
  'per-day': { value: 'N', description: 'requests per day (enterprise plan only, with --per-minute)' },
} as const
export const keyFlags = {
  name: { value: 'NAME', description: 'a label for people' },
  scopes: { value: 'SCOPES', description: `all (the default: every scope but keys:*), read_only, or a comma list of ${SCOPES.join(', ')}` },
  'expires-in': { value: 'DURATION', description: 'the key stops working after this long: 30d, 12h… (at most 366d)' },
} as const
export const json = { description: 'print JSON instead of text' } as const

export interface Admin {
  admin: KeyAdmin
  accounts: AccountAdmin
  store: Store
  config: Config
  /** The database, for messages (never its password). */
  where: string
}

/** Runs `run` with the key and account services on the store of DATABASE_URL (and Redis, for bans, when REDIS_URL is set), then names the store on stderr. */
export async function withAdmin(context: Context, run: (admin: Admin) => Promise<number>): Promise<number> {
  const config = loadConfig(context.env)
  const where = redactUrl(config.databaseUrl)
  // A database of an earlier release is not upgraded from under its servers by a command: `petstore migrate` does that.
  const store = await openStoreFromConfig(config, { migrations: { apply: 'fresh' } })
  const limiter = createRateLimiterFromConfig(config, systemClock, { onRedisTransition: () => {} })
  try {
    await limiter.ready()
    const admin = createKeyAdmin({ apiKeys: store.apiKeys, limiter, clock: systemClock, environment: keyEnvironmentFor(config.environment) })
    const accounts = createAccountAdmin({ accounts: store.accounts, keyAdmin: admin, clock: systemClock })
    const code = await run({ admin, accounts, store, config, where })
    context.io.err(`petstore: database ${where}`)
    return code
  } catch (error) {
    // A key in a state the command cannot change (revoked, rolled already): it ran, and failed.
    if (error instanceof KeyStateConflict) throw new CommandFailed(error.message)
    // Worded for this command line (--per-minute…): a mistake in the arguments.
    if (error instanceof KeyAdminError || error instanceof PlanError) throw new CliError(error.message)
    throw error
  } finally {
    await limiter.close()
    await store.close()
  }
}

export const noSuchKey = (id: string, where: string) => new CommandFailed(`there is no key with id ${id} in ${where}`)
export const noSuchAccount = (id: string, where: string) => new CommandFailed(`there is no account with id ${id} in ${where} ("petstore accounts list" shows them)`)

export function keyId(raw: string): number {
  return positiveInteger(raw, 'ID', ' (the id "petstore keys list" shows)')
}

export function accountId(raw: string): number {
  return positiveInteger(raw, 'account ID', ' (the id "petstore accounts list" shows)')
}

/** --per-minute and --per-day, those given. */
export function limitsOf(values: { 'per-minute'?: string | undefined; 'per-day'?: string | undefined }): Partial<Limits> {
  const perMinute = count(values['per-minute'], '--per-minute')
  const perDay = count(values['per-day'], '--per-day')
  return { ...(perMinute === undefined ? {} : { perMinute }), ...(perDay === undefined ? {} : { perDay }) }
}

/** --name, --scopes and --expires-in, those given. */
export function keyInput(values: { name?: string | undefined; scopes?: string | undefined; 'expires-in'?: string | undefined }): { name?: string; scopes?: Scope[]; expiresInMs?: number } {
  const { name, scopes: given, 'expires-in': expiresIn } = values
  return {
    ...(name === undefined ? {} : { name }),
    ...(given === undefined ? {} : { scopes: scopes(given) }),
    ...(expiresIn === undefined ? {} : { expiresInMs: duration(expiresIn, '--expires-in') }),
  }
}

/** Every key, or one account's, page by page. */
export async function allKeys(admin: KeyAdmin, account?: number): Promise<KeyView[]> {
  const keys: KeyView[] = []
  for (let page = await admin.page(0, 100, undefined, account); page.length > 0; page = await admin.page(page.at(-1)!.id, 100, undefined, account)) keys.push(...page)
  return keys
}

export function keyTable(keys: KeyView[]): string {
  const head = ['ID', 'ACCOUNT', 'PREFIX', 'PLAN', 'STATUS', 'EXPIRES', 'LAST USED', 'MADE BY', 'SCOPES', 'NAME']
  const rows = keys.map((key) => [
    String(key.id),
    String(key.accountId),
    `${key.prefix}…`,
    key.plan,
    keyStatus(key),
    key.expiresAt ?? '-',
    key.lastUsedAt ?? '-',
    key.createdBy === null ? 'operator' : `key ${key.createdBy}`,
    key.scopes.join(',') || '-',
    key.name,
  ])
  return tabbed([head, ...rows])
}

export function keyStatus(key: KeyView): string {
  if (key.status === 'banned') return `banned until ${key.bannedUntil}`
  if (key.status === 'revoked') return `revoked ${key.revokedAt}`
  return key.status
}

export function limitsText(holder: { limits: Limits }): string {
  return `${holder.limits.perMinute}/min, ${holder.limits.perDay}/day`
}

/** Rows as tab-separated lines: a table for `cut` and `awk` as much as for people (a tab in a cell is escaped, see printable). */
export const tabbed = (rows: string[][]): string => rows.map((row) => row.map(printable).join('\t')).join('\n')

/** One field a line, the values in a column: `keys show`, `accounts show`. */
export const fieldList = (fields: [string, string][]): string => fields.map(([name, value]) => `${name.padEnd(11)}${printable(value)}`).join('\n')

function scopes(text: string): Scope[] {
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
