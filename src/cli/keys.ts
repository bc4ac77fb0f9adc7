// `petstore keys …`: create, list, revoke and re-plan API keys.
import { parseArgs } from 'node:util'
import { issueApiKey } from '../api-keys/issue-key.js'
import { keyEnvironmentFor } from '../api-keys/key-format.js'
import { checkPlan, PlanError } from '../api-keys/plans.js'
import { systemClock } from '../clock.js'
import type { Config } from '../config.js'
import { toApiKeyRecord, type ApiKeyRecord } from '../api-keys/api-key-record.js'
import { openStoreFromConfig } from '../db/from-config.js'
import type { Store } from '../db/store.js'
import { positiveInteger } from './arguments.js'
import { CliError } from './cli-error.js'
import type { Io } from './io.js'

const limitOptions = {
  'per-minute': { type: 'string' },
  'per-day': { type: 'string' },
} as const

export async function keysCommand(argv: string[], config: Config, io: Io): Promise<number> {
  const [sub, ...rest] = argv
  switch (sub) {
    case 'create':
      return withStore(config, (store) => create(rest, config, store, io))
    case 'list':
      return withStore(config, (store) => list(rest, store, io))
    case 'revoke':
      return withStore(config, (store) => revoke(rest, store, io))
    case 'set-plan':
      return withStore(config, (store) => setPlan(rest, store, io))
    default:
      throw new CliError(sub ? `unknown keys command "${sub}": use create, list, revoke or set-plan` : 'keys needs a command: create, list, revoke or set-plan')
  }
}

async function withStore(config: Config, run: (store: Store) => Promise<number>): Promise<number> {
  const store = await openStoreFromConfig(config)
  try {
    return await run(store)
  } finally {
    await store.close()
  }
}

async function create(argv: string[], config: Config, store: Store, io: Io): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { plan: { type: 'string' }, name: { type: 'string' }, json: { type: 'boolean' }, ...limitOptions },
  })
  if (!values.plan) throw new CliError('keys create needs --plan free|pro|business|enterprise')
  const { plan, custom } = parsePlan(values.plan, values)
  const { secret, record } = await issueApiKey(store.apiKeys, systemClock, {
    name: values.name ?? `${plan} key`,
    plan,
    custom,
    environment: keyEnvironmentFor(config.environment),
  })
  if (values.json) io.out(JSON.stringify({ key: secret, ...record }, null, 2))
  else {
    io.out(secret)
    io.out(`Created key ${record.id} (${record.name}, plan ${record.plan}: ${record.limits.perMinute}/min, ${record.limits.perDay}/day). It is shown only this once.`)
  }
  return 0
}

async function list(argv: string[], store: Store, io: Io): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { json: { type: 'boolean' } } })
  const keys = (await store.apiKeys.list()).map(toApiKeyRecord)
  if (values.json) {
    io.out(JSON.stringify(keys, null, 2))
    return 0
  }
  if (keys.length === 0) {
    io.out('No keys yet: create one with "petstore keys create --plan free".')
    return 0
  }
  io.out(['ID', 'PREFIX', 'PLAN', 'PER MIN', 'PER DAY', 'CREATED', 'LAST USED', 'STATE', 'NAME'].join('\t'))
  for (const key of keys) io.out(row(key))
  return 0
}

function row(key: ApiKeyRecord): string {
  return [
    key.id,
    `${key.prefix}…`,
    key.plan,
    key.limits.perMinute,
    key.limits.perDay,
    key.createdAt,
    key.lastUsedAt ?? '-',
    key.revokedAt ? `revoked ${key.revokedAt}` : 'active',
    key.name,
  ].join('\t')
}

async function revoke(argv: string[], store: Store, io: Io): Promise<number> {
  const { positionals } = parseArgs({ args: argv, options: {}, allowPositionals: true })
  const id = keyId(positionals, 'keys revoke ID')
  if (!(await store.apiKeys.revoke(id, systemClock.now()))) throw new CliError(`there is no key with id ${id}`)
  io.out(`Revoked key ${id}; running servers refuse it within 5 seconds.`)
  return 0
}

async function setPlan(argv: string[], store: Store, io: Io): Promise<number> {
  const { positionals, values } = parseArgs({ args: argv, options: limitOptions, allowPositionals: true })
  const id = keyId(positionals.slice(0, 1), 'keys set-plan ID PLAN')
  if (positionals.length !== 2) throw new CliError('usage: petstore keys set-plan ID PLAN [--per-minute N --per-day N]')
  const { plan, custom } = parsePlan(positionals[1]!, values)
  if (!(await store.apiKeys.setPlan(id, plan, custom))) throw new CliError(`there is no key with id ${id}`)
  io.out(`Key ${id} is now on the ${plan} plan; running servers apply it within 5 seconds.`)
  return 0
}

function parsePlan(plan: string, values: { 'per-minute'?: string | undefined; 'per-day'?: string | undefined }) {
  try {
    return checkPlan(plan, { perMinute: count(values['per-minute'], '--per-minute'), perDay: count(values['per-day'], '--per-day') })
  } catch (error) {
    if (error instanceof PlanError) throw new CliError(error.message)
    throw error
  }
}

function count(value: string | undefined, flag: string): number | undefined {
  return value === undefined ? undefined : positiveInteger(value, flag)
}

function keyId(positionals: string[], usage: string): number {
  const [raw] = positionals
  if (positionals.length !== 1 || raw === undefined) throw new CliError(`usage: petstore ${usage}`)
  return positiveInteger(raw, 'ID', ' (the id "petstore keys list" shows)')
}
