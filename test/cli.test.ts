import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import SqliteDatabase from 'better-sqlite3'
import type { Pet } from '../src/schemas/pet.js'
import { runCli } from './helpers/cli.js'
import { issueTestKey, withStore } from './helpers/keys.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const run = promisify(execFile)

describe('petstore command line', () => {
  let dir: string
  let env: Record<string, string>
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-cli-'))
    env = { DATABASE_URL: `sqlite:${join(dir, 'fresh', 'petstore.db')}` }
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  const cli = (...argv: string[]) => runCli(argv, env)

  it('keys create works on a fresh database and prints the key alone on the first line', async () => {
    const res = await cli('keys', 'create', '--plan', 'free', '--name', 'first')
    assert.equal(res.code, 0)
    assert.match(res.out[0]!, /^ps_test_[0-9A-Za-z]{36}$/)
  })

  it('keys create --json prints the whole record with the key', async () => {
    const res = await cli('keys', 'create', '--plan', 'enterprise', '--per-minute', '5000', '--per-day', '90000', '--json')
    assert.equal(res.code, 0)
    const record = res.json() as { key: string; plan: string; limits: { perMinute: number; perDay: number } }
    assert.match(record.key, /^ps_test_/)
    assert.equal(record.plan, 'enterprise')
    assert.deepEqual(record.limits, { perMinute: 5000, perDay: 90000 })
  })

  it('keys list --json lists records, never the secret', async () => {
    const created = await cli('keys', 'create', '--plan', 'pro')
    const res = await cli('keys', 'list', '--json')
    assert.equal(res.code, 0)
    const keys = res.json() as Record<string, unknown>[]
    assert.ok(keys.length >= 2)
    for (const field of ['id', 'accountId', 'name', 'plan', 'prefix', 'limits', 'createdAt', 'lastUsedAt', 'revokedAt', 'createdBy']) assert.ok(field in keys[0]!, field)
    // Each key made with --plan is the first of an account of its own, made by the operator.
    assert.equal(new Set(keys.map((k) => k.accountId)).size, keys.length)
    assert.ok(keys.every((k) => k.createdBy === null))
    assert.ok(!res.out.join('\n').includes(created.out[0]!))
    assert.ok(keys.some((k) => created.out[0]!.startsWith(k.prefix as string)))
  })

  it('keys list prints a table', async () => {
    const res = await cli('keys', 'list')
    assert.equal(res.out[0], 'ID\tACCOUNT\tPREFIX\tPLAN\tSTATUS\tEXPIRES\tLAST USED\tMADE BY\tSCOPES\tNAME')
    assert.match(res.out[1]!, /^1\t1\tps_test_\w{4}…\tfree\tactive\t-\t-\toperator\tpets:read,/)
  })

  it('keys revoke and set-plan change the record', async () => {
    assert.equal((await cli('keys', 'revoke', '1')).code, 0)
    assert.equal((await cli('keys', 'set-plan', '2', 'business')).code, 0)
    const keys = (await cli('keys', 'list', '--json')).json() as { id: number; plan: string; revokedAt: string | null; limits: object }[]
    assert.ok(keys.find((k) => k.id === 1)!.revokedAt)
    assert.equal(keys.find((k) => k.id === 2)!.plan, 'business')
    assert.deepEqual(keys.find((k) => k.id === 2)!.limits, { perMinute: 1000, perDay: 100000 })
  })

  it('migrate reports the store is up to date', async () => {
    const res = await cli('migrate')
    assert.equal(res.code, 0)
    assert.equal(res.out[0], `migrations are up to date (${env.DATABASE_URL})`)
  })

  const mistakes: [string, string[], RegExp][] = [
    ['no command', [], /no command given; run "petstore --help"/],
    ['an unknown command', ['frobnicate'], /unknown command/],
    ['keys create with neither --plan nor --account', ['keys', 'create'], /^petstore: give --plan PLAN \(a new account with this key\) or --account ID \(a key for an existing account\)$/],
    ['keys create with both --plan and --account', ['keys', 'create', '--plan', 'free', '--account', '1'], /^petstore: give --plan PLAN \(a new account\) or --account ID \(an existing one\), not both$/],
    ['an account id that is not a number', ['keys', 'create', '--account', 'one'], /account ID must be a positive integer/],
    ['accounts create without --plan', ['accounts', 'create'], /^petstore: --plan is required; usage: petstore accounts create --plan PLAN/],
    ['an unknown plan', ['keys', 'create', '--plan', 'gold'], /unknown plan "gold"/],
    ['enterprise without limits', ['keys', 'create', '--plan', 'enterprise'], /--per-minute/],
    ['limits on a non-enterprise plan', ['keys', 'create', '--plan', 'free', '--per-minute', '5', '--per-day', '10'], /enterprise/],
    ['a non-numeric limit', ['keys', 'create', '--plan', 'enterprise', '--per-minute', 'lots', '--per-day', '10'], /--per-minute/],
    ['an unknown flag', ['keys', 'list', '--colour'], /colour/],
    ['revoke without an id', ['keys', 'revoke'], /^petstore: missing ID; usage: petstore keys revoke ID \[--cascade\]$/],
    ['set-plan without a plan', ['keys', 'set-plan', '2'], /^petstore: missing PLAN; usage: petstore keys set-plan ID PLAN/],
    ['a flag without its value', ['keys', 'create', '--plan'], /^petstore: --plan needs a value \(PLAN\)/],
    ['an argument too many', ['keys', 'revoke', '1', '2'], /^petstore: unexpected argument "2"; usage/],
    // One integer reader for every command: positive, plain decimal, exact (at most 2^53-1).
    ['a key id beyond 2^53-1', ['keys', 'revoke', '9007199254740993'], /ID must be a positive integer .*"9007199254740993"/],
    ['a key id of 0', ['keys', 'revoke', '0'], /ID must be a positive integer/],
    ['a limit beyond 2^53-1', ['keys', 'create', '--plan', 'enterprise', '--per-minute', '99999999999999999', '--per-day', '10'], /--per-minute must be a positive integer/],
  ]
  for (const [what, argv, message] of mistakes) {
    it(`exits 2 with one line on stderr for ${what}`, async () => {
      const res = await cli(...argv)
      assert.equal(res.code, 2)
      assert.equal(res.err.length, 1)
      assert.match(res.err[0]!, message)
    })
  }

  for (const argv of [['keys', '--help'], ['keys', 'create', '--help'], ['accounts', '--help'], ['accounts', 'create', '--help'], ['pets', '--help'], ['pets', 'list', '-h'], ['serve', '--help'], ['migrate', '--help']]) {
    it(`prints the usage of the command for ${argv.join(' ')} and exits 0`, async () => {
      const res = await cli(...argv)
      assert.equal(res.code, 0, res.err.join('\n'))
      assert.deepEqual(res.err, [])
      assert.match(res.out[0]!, new RegExp(`^Usage: petstore ${argv.filter((arg) => !arg.startsWith('-')).join(' ')}\\b`))
    })
  }

  it('keys create --help is that command alone, a line per flag', async () => {
    const res = await cli('keys', 'create', '--help')
    assert.equal(res.out[0], 'Usage: petstore keys create [--plan PLAN] [--account ID] [--name NAME] [--scopes SCOPES] [--expires-in DURATION] [--per-minute N] [--per-day N] [--json]')
    for (const flag of ['--plan PLAN', '--account ID', '--name NAME', '--per-minute N', '--per-day N', '--scopes SCOPES', '--expires-in DURATION', '--json', '-h, --help']) {
      assert.ok(res.out.some((line) => line.startsWith(`  ${flag} `)), `${flag} in\n${res.out.join('\n')}`)
    }
    assert.ok(!res.out.some((line) => line.includes('keys revoke')), 'not the whole group')
    assert.match(res.out.find((line) => line.startsWith('  --plan'))!, /free, pro, business or enterprise: makes an account on this plan, with this key as its first$/)
    assert.match(res.out.find((line) => line.startsWith('  --account'))!, /adds the key to this account instead \(its plan and limits\)$/)
  })

  it('petstore keys --help lists every keys command and nothing else', async () => {
    const res = await cli('keys', '--help')
    const commands = res.out.filter((line) => /^ {2}\S/.test(line)).map((line) => line.trim().split(/\s{2,}/)[0])
    assert.deepEqual(commands, ['keys create', 'keys list', 'keys show', 'keys revoke', 'keys disable', 'keys enable', 'keys set-plan', 'keys roll', 'keys unban', 'keys usage'])
  })

  it('petstore accounts --help lists every accounts command and nothing else', async () => {
    const res = await cli('accounts', '--help')
    const commands = res.out.filter((line) => /^ {2}\S/.test(line)).map((line) => line.trim().split(/\s{2,}/)[0])
    assert.deepEqual(commands, ['accounts create', 'accounts list', 'accounts show', 'accounts set-plan', 'accounts disable', 'accounts enable'])
  })

  const guesses: [string[], string][] = [
    [['keys', 'create', '--plna', 'free'], "unknown option '--plna' (did you mean --plan?)"],
    [['keys', 'list', '--jsno'], "unknown option '--jsno' (did you mean --json?)"],
    [['keys', 'crate'], 'unknown keys command "crate" (did you mean create?)'],
    [['serv'], 'unknown command "serv" (did you mean serve?)'],
    [['keys', 'list', '--colour'], "unknown option '--colour'; usage: petstore keys list [--account ID] [--json]"],
    [['keys', 'create', '--plan', 'free', '--name', '-Rex'], "--name's value starts with a dash, which reads as an option: write it joined, --name=<value>; usage: petstore keys create"],
  ]
  for (const [argv, message] of guesses) {
    it(`says what was meant for petstore ${argv.join(' ')}, exit 2`, async () => {
      const res = await cli(...argv)
      assert.equal(res.code, 2)
      assert.deepEqual(res.err.length, 1)
      assert.ok(res.err[0]!.startsWith(`petstore: ${message}`), res.err[0])
    })
  }

  it('keys show ID prints one key, never its secret, and names the database on stderr', async () => {
    const created = await cli('keys', 'create', '--plan', 'business', '--name', 'shown')
    const made = /^Created key (\d+) in account (\d+) \(shown, plan business: 1000\/min, 100000\/day; pets:read .*\)\. It is shown only this once\.$/.exec(created.out[1]!)
    assert.ok(made, created.out[1])
    const [, id, account] = made
    assert.deepEqual(created.err, [`petstore: database ${env.DATABASE_URL}`])
    const res = await cli('keys', 'show', id!)
    assert.equal(res.code, 0)
    assert.deepEqual(res.out.slice(0, 7), [
      `id         ${id}`,
      `account    ${account}`,
      'name       shown',
      `prefix     ${created.out[0]!.slice(0, 12)}…`,
      'plan       business (1000/min, 100000/day)',
      'status     active',
      'scopes     pets:read pets:write categories:read categories:write orders:read orders:write usage:read events:read webhooks:read webhooks:write',
    ])
    assert.equal(res.out.at(-1), 'made by    the operator')
    assert.ok(!res.out.join('\n').includes(created.out[0]!))
    assert.deepEqual(res.err, [`petstore: database ${env.DATABASE_URL}`])
    const json = (await cli('keys', 'show', id!, '--json')).json<{ id: number; name: string; accountId: number; createdBy: number | null }>()
    assert.deepEqual([json.id, json.name, json.accountId, json.createdBy], [Number(id), 'shown', Number(account), null])
  })

  it('makes keys with scopes and an expiry, rolls, disables and enables them, and prints their usage', async () => {
    const made = (await cli('keys', 'create', '--plan', 'pro', '--scopes', 'read_only', '--expires-in', '30d', '--json')).json<{ id: number; scopes: string[]; expiresAt: string; status: string }>()
    assert.deepEqual(made.scopes, ['pets:read', 'categories:read', 'orders:read', 'usage:read', 'events:read', 'webhooks:read'])
    assert.ok(Math.abs(Date.parse(made.expiresAt) - Date.now() - 30 * 86_400_000) < 60_000)
    assert.equal(made.status, 'active')
    // Presets and scopes together, as the README's operator key.
    const ops = (await cli('keys', 'create', '--plan', 'business', '--scopes', 'all,keys:write', '--json')).json<{ scopes: string[] }>()
    assert.deepEqual(ops.scopes, ['pets:read', 'pets:write', 'categories:read', 'categories:write', 'orders:read', 'orders:write', 'usage:read', 'events:read', 'webhooks:read', 'webhooks:write', 'keys:read', 'keys:write'])
    const rolled = await cli('keys', 'roll', String(made.id), '--grace', '0')
    assert.equal(rolled.code, 0, rolled.err.join('\n'))
    assert.match(rolled.out[0]!, /^ps_test_/)
    assert.match(rolled.out[1]!, new RegExp(`in place of key ${made.id}, which works until`))
    const old = (await cli('keys', 'show', String(made.id), '--json')).json<{ status: string; replacedBy: number }>()
    assert.equal(old.status, 'expired')
    const again = await cli('keys', 'roll', String(made.id))
    assert.equal(again.code, 1, 'a key is rolled once: its successor is the one to roll')
    assert.match(again.err.join('\n'), new RegExp(`Key ${made.id} was rolled already, into key ${old.replacedBy}: roll key ${old.replacedBy} instead`))
    assert.deepEqual((await cli('keys', 'disable', String(old.replacedBy))).out, [`Key ${old.replacedBy} is disabled.`])
    assert.deepEqual((await cli('keys', 'enable', String(old.replacedBy))).out, [`Key ${old.replacedBy} is active.`])
    const usage = await cli('keys', 'usage', String(old.replacedBy))
    assert.equal(usage.code, 0)
    assert.deepEqual(usage.out, [`No requests from key ${old.replacedBy} in the last 7 days.`])
    const table = await cli('keys', 'list')
    assert.match(table.out[0]!, /^ID\tACCOUNT\tPREFIX\tPLAN\tSTATUS\tEXPIRES\tLAST USED\tMADE BY\tSCOPES\tNAME$/)
    assert.ok(table.out.some((line) => line.startsWith(`${made.id}\t`) && line.includes('\texpired\t')), table.out.join('\n'))
  })

  it('refuses a bad scope or duration (2), and an unban it cannot reach (1)', async () => {
    const scope = await cli('keys', 'create', '--plan', 'free', '--scopes', 'pets:fly')
    assert.deepEqual([scope.code, scope.err], [2, ['petstore: --scopes: unknown scope "pets:fly": use pets:read, pets:write, categories:read, categories:write, orders:read, orders:write, usage:read, events:read, webhooks:read, webhooks:write, keys:read, keys:write, or a preset (all, read_only)']])
    const expiry = await cli('keys', 'create', '--plan', 'free', '--expires-in', '30 days')
    assert.equal(expiry.code, 2)
    assert.match(expiry.err[0]!, /--expires-in must be a number and a unit/)
    assert.equal((await cli('keys', 'create', '--plan', 'free', '--expires-in', '400d')).code, 2, 'at most a year')
    // Names as the API's schema takes them, or GET /v1/account serves what its document refuses.
    for (const argv of [['accounts', 'create', '--plan', 'free', '--name', ''], ['keys', 'create', '--plan', 'free', '--name', 'n'.repeat(101)], ['accounts', 'create', '--plan', 'free', '--name', 'a\u0000b'], ['keys', 'create', '--plan', 'free', '--name', 'a\u001b]0;title\u0007']]) {
      const named = await cli(...argv)
      assert.equal(named.code, 2, argv.join(' '))
      assert.match(named.err[0]!, /A name is 1 to 100 characters: one line of valid Unicode without control characters/)
    }
    assert.equal((await cli('keys', 'create', '--plan', 'free', '--name', '🐕'.repeat(100))).code, 0, '100 characters, however many UTF-16 units')
    const unban = await cli('keys', 'unban', '1')
    assert.equal(unban.code, 1)
    assert.match(unban.err[0]!, /without REDIS_URL a ban lives in the running server's memory: lift it with POST \/v1\/keys\/1\/unban/)
  })

  it('exits 1, not 2, when the command ran and met a failure, naming the database it looked in', async () => {
    for (const argv of [['keys', 'show', '999'], ['keys', 'revoke', '999'], ['keys', 'set-plan', '999', 'pro']]) {
      const res = await cli(...argv)
      assert.equal(res.code, 1, argv.join(' '))
      assert.deepEqual(res.err, [`petstore: there is no key with id 999 in ${env.DATABASE_URL}`])
    }
    for (const argv of [['accounts', 'show', '999'], ['accounts', 'set-plan', '999', 'pro'], ['accounts', 'disable', '999'], ['accounts', 'enable', '999'], ['keys', 'create', '--account', '999'], ['keys', 'list', '--account', '999']]) {
      const res = await cli(...argv)
      assert.equal(res.code, 1, argv.join(' '))
      assert.deepEqual(res.err, [`petstore: there is no account with id 999 in ${env.DATABASE_URL} ("petstore accounts list" shows them)`])
    }
  })

  it('prints the package version for --version', async () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }
    for (const flag of ['--version', '-V']) {
      const res = await cli(flag)
      assert.equal(res.code, 0)
      assert.deepEqual(res.out, [version])
    }
  })

  it('fails naming the variable when the environment is wrong', async () => {
    const res = await runCli(['keys', 'list'], { PETSTORE_ENV: 'moon' })
    assert.equal(res.code, 1)
    assert.equal(res.err.length, 1)
    assert.match(res.err[0]!, /PETSTORE_ENV/)
  })

  it('runs as an installed command: bin/petstore.js keys create', async () => {
    const { stdout } = await run(process.execPath, ['bin/petstore.js', 'keys', 'create', '--plan', 'free'], {
      env: { ...process.env, ...env },
    })
    assert.match(stdout.split('\n')[0]!, /^ps_test_/)
  })

  it('accounts create makes an account and its first key, keys create --account adds a second: accounts show lists both, keys list --account only them', async () => {
    const made = await cli('accounts', 'create', '--plan', 'pro', '--name', 'acme')
    assert.equal(made.code, 0, made.err.join('\n'))
    assert.match(made.out[0]!, /^ps_test_[0-9A-Za-z]{36}$/)
    const created = /^Created account (\d+) \(acme, plan pro: 300\/min, 10000\/day\) with key (\d+)\. The key is shown only this once\.$/.exec(made.out[1]!)
    assert.ok(created, made.out[1])
    const [, account, first] = created
    const added = await cli('keys', 'create', '--account', account!, '--name', 'second')
    assert.equal(added.code, 0, added.err.join('\n'))
    assert.match(added.out[0]!, /^ps_test_[0-9A-Za-z]{36}$/)
    assert.notEqual(added.out[0], made.out[0])
    const second = new RegExp(`^Created key (\\d+) in account ${account} \\(second, plan pro: 300/min, 10000/day; pets:read `).exec(added.out[1]!)?.[1]
    assert.ok(second, added.out[1])
    assert.equal((await cli('keys', 'create', '--plan', 'free', '--name', 'elsewhere')).code, 0) // another account's, for the filter to leave out

    const shown = await cli('accounts', 'show', account!)
    assert.equal(shown.code, 0, shown.err.join('\n'))
    const blank = shown.out.indexOf('')
    assert.deepEqual(
      shown.out.slice(0, blank).filter((line) => !line.startsWith('created ')),
      [`id         ${account}`, 'name       acme', 'plan       pro (300/min, 10000/day, shared by its keys)', 'status     active', 'keys       2', 'today      ok 0, rate_limited 0, banned 0, forbidden 0, error 0'],
    )
    const keysTable = shown.out.slice(blank + 1)
    assert.equal(keysTable[0], 'ID\tACCOUNT\tPREFIX\tPLAN\tSTATUS\tEXPIRES\tLAST USED\tMADE BY\tSCOPES\tNAME')
    assert.deepEqual(
      keysTable.slice(1).map((line) => line.split('\t')),
      [
        [first, account, `${made.out[0]!.slice(0, 12)}…`, 'pro', 'active', '-', '-', 'operator', 'pets:read,pets:write,categories:read,categories:write,orders:read,orders:write,usage:read,events:read,webhooks:read,webhooks:write', 'acme'],
        [second, account, `${added.out[0]!.slice(0, 12)}…`, 'pro', 'active', '-', '-', 'operator', 'pets:read,pets:write,categories:read,categories:write,orders:read,orders:write,usage:read,events:read,webhooks:read,webhooks:write', 'second'],
      ],
    )
    const json = (await cli('accounts', 'show', account!, '--json')).json<{ id: number; plan: string; status: string; keyCount: number; keys: { id: number }[] }>()
    assert.deepEqual([json.id, json.plan, json.status, json.keyCount, json.keys.map((key) => key.id)], [Number(account), 'pro', 'active', 2, [Number(first), Number(second)]])

    const listed = await cli('keys', 'list', '--account', account!)
    assert.equal(listed.code, 0)
    assert.deepEqual(listed.out, keysTable)
    const listedJson = (await cli('keys', 'list', '--account', account!, '--json')).json<{ id: number; accountId: number; createdBy: number | null }[]>()
    assert.deepEqual(
      listedJson.map((key) => [key.id, key.accountId, key.createdBy]),
      [
        [Number(first), Number(account), null],
        [Number(second), Number(account), null],
      ],
    )
    const everyKey = (await cli('keys', 'list', '--json')).json<{ accountId: number }[]>()
    assert.ok(everyKey.some((key) => key.accountId !== Number(account)), 'without --account: every account\'s keys')

    const accounts = await cli('accounts', 'list')
    assert.equal(accounts.out[0], 'ID\tPLAN\tPER MIN\tPER DAY\tSTATUS\tKEYS\tCREATED\tNAME')
    const row = accounts.out.find((line) => line.startsWith(`${account}\t`))?.split('\t')
    assert.deepEqual([...(row ?? []).slice(0, 6), row?.[7]], [account, 'pro', '300', '10000', 'active', '2', 'acme'])
  })

  it('accounts set-plan moves the account, so every key of it, to the plan; keys set-plan moves the account of the key', async () => {
    const made = await cli('accounts', 'create', '--plan', 'free', '--json')
    assert.equal(made.code, 0, made.err.join('\n'))
    const { account, apiKey } = made.json<{ account: { id: number; plan: string }; key: string; apiKey: { id: number; accountId: number } }>()
    assert.deepEqual([account.plan, apiKey.accountId], ['free', account.id])
    const other = (await cli('keys', 'create', '--account', String(account.id), '--json')).json<{ id: number }>()
    const planOf = async (id: number) => (await cli('keys', 'show', String(id))).out.find((line) => line.startsWith('plan '))

    const moved = await cli('accounts', 'set-plan', String(account.id), 'enterprise', '--per-minute', '5000', '--per-day', '90000')
    assert.equal(moved.code, 0, moved.err.join('\n'))
    for (const id of [apiKey.id, other.id]) assert.equal(await planOf(id), 'plan       enterprise (5000/min, 90000/day)', `key ${id}`)
    assert.deepEqual(moved.out, [`Account ${account.id} is now on the enterprise plan (5000/min, 90000/day); running servers apply it within 5 seconds.`])

    const fixed = await cli('accounts', 'set-plan', String(account.id), 'business')
    assert.equal(fixed.code, 0, fixed.err.join('\n'))
    for (const id of [apiKey.id, other.id]) assert.equal(await planOf(id), 'plan       business (1000/min, 100000/day)', `key ${id}`)
    const noLimits = await cli('accounts', 'set-plan', String(account.id), 'enterprise')
    assert.deepEqual([noLimits.code, noLimits.err.length], [2, 1])
    assert.match(noLimits.err[0]!, /--per-minute/)
    assert.equal(await planOf(other.id), 'plan       business (1000/min, 100000/day)', 'a refused change changes nothing')

    const byKey = await cli('keys', 'set-plan', String(other.id), 'pro')
    assert.deepEqual(byKey.out, [`Account ${account.id} of key ${other.id} is now on the pro plan (300/min, 10000/day), for all its keys; running servers apply it within 5 seconds.`])
    assert.equal(await planOf(apiKey.id), 'plan       pro (300/min, 10000/day)', 'the other key of the account')
  })

  it('prints a name stored with control characters escaped, in tables and details: it can neither forge a row nor reach the terminal', async () => {
    // Stored before names refused them: erase the line, go back to its start, write a forged row, retitle the window.
    const name = 'ok\u001b[2K\r9\t1\tenterprise\u001b]0;pwned\u0007\u202e'
    const { id, accountId } = await withStore(env.DATABASE_URL!, (store) => issueTestKey(store.apiKeys, { name }))
    const escaped = 'ok\\u001b[2K\\u000d9\\u00091\\u0009enterprise\\u001b]0;pwned\\u0007\\u202e'
    const table = await cli('keys', 'list', '--account', String(accountId))
    assert.deepEqual(table.out.slice(1).map((line) => line.split('\t').at(-1)), [escaped], table.out.join('\n'))
    assert.ok(table.out.every((line) => line.split('\t').length === 10), 'one cell a column')
    assert.ok((await cli('keys', 'show', String(id))).out.includes(`name       ${escaped}`))
    const account = await cli('accounts', 'show', String(accountId))
    assert.ok(account.out.includes(`name       ${escaped}`), account.out.join('\n'))
    assert.ok(![...account.out.join('')].some((c) => (c < ' ' && c !== '\t') || c === '\u007f' || c === '\u202e'), 'no control character but the table\'s tabs reaches the terminal')
    const asJson = await cli('keys', 'show', String(id), '--json')
    assert.equal(asJson.json<{ name: string }>().name, name, 'JSON carries the name as stored')
    assert.ok(asJson.out.join('\n').includes('pwned\\u0007\\u202e"'), 'escaped, the override too (JSON.stringify leaves it raw)')
  })
})

describe('petstore accounts … and keys revoke --cascade beside a running server', () => {
  let server: TestServer
  let env: Record<string, string>
  before(async () => {
    server = await startTestServer()
    // The operator's shell: the command line on the running server's own store.
    env = { DATABASE_URL: server.config.databaseUrl }
  })
  after(() => server.close())

  const cli = (...argv: string[]) => runCli(argv, env)
  interface MadeAccount {
    account: { id: number }
    key: string
    apiKey: { id: number }
  }
  interface MadeKey {
    key: string
    id: number
  }
  const json = async <T>(...argv: string[]): Promise<T> => {
    const res = await cli(...argv, '--json')
    assert.equal(res.code, 0, res.err.join('\n'))
    return res.json<T>()
  }

  /** The status the server answers `key` with once it is `status`, asking until `ms` have passed (its cache of keys lasts under 5 s). */
  async function statusWithin(key: string, status: number, ms = 5_000): Promise<number> {
    const deadline = Date.now() + ms
    for (;;) {
      const res = await server.request('/v1/pets', { key })
      if (res.status === status || Date.now() >= deadline) return res.status
      await sleep(100)
    }
  }

  it('accounts disable: the running server answers 401 for every key of the account within 5 s, and accounts enable lets them in again', async () => {
    const made = await json<MadeAccount>('accounts', 'create', '--plan', 'pro')
    const account = String(made.account.id)
    const second = await json<MadeKey>('keys', 'create', '--account', account)
    const bystander = await json<MadeKey>('keys', 'create', '--plan', 'pro')
    // Each one in use, so the server holds it in its cache as active.
    for (const key of [made.key, second.key, bystander.key]) assert.equal((await server.request('/v1/pets', { key })).status, 200)

    const off = await cli('accounts', 'disable', account)
    const disabledAt = Date.now()
    assert.deepEqual([off.code, off.out], [0, [`Account ${account} is disabled.`]])
    for (const key of [made.key, second.key]) assert.equal(await statusWithin(key, 401, 5_000 - (Date.now() - disabledAt)), 401)
    const refused = await server.request<{ message: string }>('/v1/pets', { key: made.key })
    assert.match(refused.body.message, new RegExp(`\\(account ${account}\\) is disabled`))
    assert.equal((await server.request('/v1/pets', { key: bystander.key })).status, 200, 'the keys of other accounts still work')
    const shown = await cli('accounts', 'show', account)
    assert.match(shown.out.find((line) => line.startsWith('status '))!, /^status {5}disabled \d{4}-\d\d-\d\dT/)
    assert.deepEqual(
      shown.out.slice(shown.out.indexOf('') + 2).map((line) => line.split('\t')[4]),
      ['disabled', 'disabled'],
    )

    const on = await cli('accounts', 'enable', account)
    assert.deepEqual([on.code, on.out], [0, [`Account ${account} is active.`]])
    assert.equal(await statusWithin(made.key, 200), 200)
    assert.match((await cli('accounts', 'show', account)).out.find((line) => line.startsWith('status '))!, /^status {5}active$/)
  })

  it("keys disable holds against the account's own keys: one with keys:write cannot enable it (403), the operator can; a key they disabled, they enable", async () => {
    const made = await json<MadeAccount>('accounts', 'create', '--plan', 'pro', '--scopes', 'all,keys:write')
    const stopped = await json<MadeKey>('keys', 'create', '--account', String(made.account.id))
    assert.deepEqual((await cli('keys', 'disable', String(stopped.id))).out, [`Key ${stopped.id} is disabled.`])
    const enable = (id: number) => server.request<{ code: string; message: string; status: string }>(`/v1/keys/${id}`, { method: 'PATCH', key: made.key, json: { enabled: true } })
    const refused = await enable(stopped.id)
    assert.equal(refused.status, 403)
    assert.match(refused.body.message, new RegExp(`Key ${stopped.id} was disabled by the operator, who alone can enable it again`))
    // Disabled again over the API, it stays the operator's stop.
    assert.equal((await server.request(`/v1/keys/${stopped.id}`, { method: 'PATCH', key: made.key, json: { enabled: false } })).status, 200)
    assert.equal((await enable(stopped.id)).status, 403)
    // A roll keeps the stop on the new key (the operator's roll: a key rolls only itself and the keys it made).
    const rolled = await json<{ id: number }>('keys', 'roll', String(stopped.id))
    assert.equal((await enable(rolled.id)).status, 403, 'the roll of a key the operator stopped')
    assert.deepEqual((await cli('keys', 'enable', String(rolled.id))).out, [`Key ${rolled.id} is active.`])
    // One the account's keys stopped, they may start.
    assert.equal((await server.request(`/v1/keys/${rolled.id}`, { method: 'PATCH', key: made.key, json: { enabled: false } })).status, 200)
    assert.equal((await enable(rolled.id)).body.status, 'active')
  })

  it("keys disable committed between a key's read and its write of PATCH {enabled} is not undone, nor its mark erased: the key's change is judged again", async () => {
    const made = await json<MadeAccount>('accounts', 'create', '--plan', 'pro', '--scopes', 'all,keys:write')
    const target = await json<MadeKey>('keys', 'create', '--account', String(made.account.id))
    const apiKeys = server.store.apiKeys
    const update = apiKeys.update
    for (const enabled of [true, false]) {
      // The operator's `keys disable` commits just before the tenant's write, as a race would have it.
      let raced = false
      apiKeys.update = async (id, changes) => {
        if (!raced && id === target.id) {
          raced = true
          assert.deepEqual((await cli('keys', 'disable', String(target.id))).out, [`Key ${target.id} is disabled.`])
        }
        return update.call(apiKeys, id, changes)
      }
      try {
        const res = await server.request<{ code: string; status: string }>(`/v1/keys/${target.id}`, { method: 'PATCH', key: made.key, json: { enabled } })
        assert.equal(res.status, enabled ? 403 : 200, `enabled: ${enabled}`)
      } finally {
        apiKeys.update = update
      }
      const stored = (await server.store.apiKeys.findById(target.id))!
      assert.ok(stored.disabledAt !== null && stored.disabledByOperator, `enabled: ${enabled}: still the operator's stop`)
      assert.deepEqual((await cli('keys', 'enable', String(target.id))).out, [`Key ${target.id} is active.`])
    }
  })

  it('keys revoke --cascade revokes the key and every key it made, however deep, printing their ids; without it, the key alone', async () => {
    const parent = await json<MadeAccount>('accounts', 'create', '--plan', 'pro', '--scopes', 'all,keys:write', '--name', 'parent')
    const account = String(parent.account.id)
    // Keys made by keys, over the admin API: their created_by is their maker.
    const makeWith = async (maker: string, name: string): Promise<MadeKey> => {
      const res = await server.request<{ key: string; apiKey: { id: number } }>('/v1/keys', { method: 'POST', key: maker, json: { name, scopes: ['all', 'keys:write'] } })
      assert.equal(res.status, 201, res.text)
      return { key: res.body.key, id: res.body.apiKey.id }
    }
    const child = await makeWith(parent.key, 'child')
    const grandchild = await makeWith(child.key, 'grandchild')
    const sibling = await json<MadeKey>('keys', 'create', '--account', account, '--scopes', 'all,keys:write', '--name', 'sibling')
    const nephew = await makeWith(sibling.key, 'nephew')
    const [p, c, g, s, n] = [parent.apiKey.id, child.id, grandchild.id, sibling.id, nephew.id]

    const listed = await cli('keys', 'list', '--account', account)
    assert.deepEqual(
      listed.out.slice(1).map((line) => [line.split('\t')[0], line.split('\t')[7]]),
      [
        [`${p}`, 'operator'],
        [`${c}`, `key ${p}`],
        [`${g}`, `key ${c}`],
        [`${s}`, 'operator'],
        [`${n}`, `key ${s}`],
      ],
    )
    assert.equal((await cli('keys', 'show', String(g))).out.find((line) => line.startsWith('made by ')), `made by    key ${c}`)

    const alone = await cli('keys', 'revoke', String(s))
    assert.deepEqual([alone.code, alone.out], [0, [`Revoked key ${s}; running servers refuse it within 5 seconds.`]])
    const cascade = await cli('keys', 'revoke', String(p), '--cascade')
    assert.deepEqual([cascade.code, cascade.out], [0, [`Revoked key ${p} and the keys it made: ${c}, ${g}; running servers refuse them within 5 seconds.`]])

    const keys = await json<{ id: number; status: string; revokedAt: string | null; createdBy: number | null }[]>('keys', 'list', '--account', account)
    assert.deepEqual(
      keys.map((key) => [key.id, key.status, key.createdBy]),
      [
        [p, 'revoked', null],
        [c, 'revoked', p],
        [g, 'revoked', c],
        [s, 'revoked', null],
        [n, 'active', s],
      ],
    )
    // The child was in use (it made the grandchild): the server refuses it, and the grandchild, within 5 s.
    const revokedAt = Date.now()
    for (const key of [child.key, grandchild.key]) assert.equal(await statusWithin(key, 401, 5_000 - (Date.now() - revokedAt)), 401)
    assert.equal((await server.request('/v1/pets', { key: nephew.key })).status, 200, 'a key made by a key revoked alone still works')
  })
})

describe('petstore pets …', () => {
  let server: TestServer
  let env: Record<string, string>
  before(async () => {
    server = await startTestServer()
    // A DATABASE_URL the store would refuse: the pets commands must not read it.
    env = { PETSTORE_URL: server.url, PETSTORE_API_KEY: await server.createKey('pro'), DATABASE_URL: 'mysql://nowhere' }
  })
  after(() => server.close())

  const cli = (argv: string[], environment: Record<string, string> = env) => runCli(argv, environment)

  it('pets create prints the created pet as JSON', async () => {
    const res = await cli(['pets', 'create', '--name', 'Rex', '--category-id', '4', '--status', 'sold', '--idempotency-key', 'cli-1'])
    assert.equal(res.code, 0, res.err.join('\n'))
    const pet = res.json<Pet>()
    assert.deepEqual(pet, { id: pet.id, name: 'Rex', categoryId: 4, status: 'sold' })
  })

  it('pets list prints the array, the next cursor on stderr, and follows every page with --all', async () => {
    await cli(['pets', 'create', '--name', 'Bella', '--category-id', '4', '--status', 'sold'])
    const first = await cli(['pets', 'list', '--status', 'sold', '--limit', '1'])
    assert.equal(first.code, 0)
    assert.deepEqual(
      first.json<Pet[]>().map((pet) => pet.name),
      ['Rex'],
    )
    const cursor = /--cursor (\S+)/.exec(first.err.join('\n'))?.[1]
    assert.ok(cursor, first.err.join('\n'))
    const second = await cli(['pets', 'list', '--status', 'sold', '--limit', '1', '--cursor', cursor])
    assert.deepEqual(
      second.json<Pet[]>().map((pet) => pet.name),
      ['Bella'],
    )
    assert.deepEqual(second.err, []) // the last page
    const all = await cli(['pets', 'list', '--status', 'sold', '--limit', '1', '--all'])
    assert.deepEqual(
      all.json<Pet[]>().map((pet) => pet.name),
      ['Rex', 'Bella'],
    )
  })

  it('prints a name stored before names were checked with its controls escaped: it cannot reach the terminal', async () => {
    // Written straight into the database, as a release before the name rules accepted it.
    const file = server.config.databaseUrl.slice('sqlite:'.length)
    const db = new SqliteDatabase(file)
    const id = Number(db.prepare("INSERT INTO pets (name, category_id, status, created_at) VALUES (?, 1, 'available', 1) RETURNING id").pluck().get('legacy\u009b2J\u202eevil\u001b]0;PWNED\u0007'))
    db.close()
    for (const argv of [['pets', 'get', String(id)], ['pets', 'list', '--ids', String(id)]]) {
      const res = await cli(argv)
      assert.equal(res.code, 0, res.err.join('\n'))
      const text = res.out.join('\n')
      assert.ok(text.includes('legacy\\u009b2J\\u202eevil\\u001b]0;PWNED\\u0007'), text)
      assert.ok(![...text].some((c) => (c < ' ' && c !== '\n') || (c >= '\u007f' && c <= '\u009f') || c === '\u202e'), `${argv.join(' ')}: no control character reaches the terminal`)
    }
  })

  it('pets get ID prints the pet', async () => {
    const pet = (await cli(['pets', 'create', '--name', 'Solo', '--category-id', '2'])).json<Pet>()
    const res = await cli(['pets', 'get', String(pet.id)])
    assert.equal(res.code, 0)
    assert.deepEqual(res.json<Pet>(), pet)
  })

  it('pets update changes the fields given and prints the pet (its ETag on stderr); pets delete removes it', async () => {
    const pet = (await cli(['pets', 'create', '--name', 'Mutable', '--category-id', '2', '--status', 'pending'])).json<Pet>()
    const updated = await cli(['pets', 'update', String(pet.id), '--status', 'available', '--name', 'Changed'])
    assert.equal(updated.code, 0, updated.err.join('\n'))
    assert.deepEqual(updated.json<Pet>(), { ...pet, name: 'Changed', status: 'available' })
    const etag = /^etag: (".*")$/.exec(updated.err[0] ?? '')?.[1]
    assert.ok(etag, updated.err.join('\n'))
    const stale = await cli(['pets', 'update', String(pet.id), '--name', 'Late', '--if-match', '"old"'])
    assert.equal(stale.code, 1)
    assert.match(stale.err[0]!, /^petstore: 412 precondition_failed: /)
    assert.equal((await cli(['pets', 'delete', String(pet.id), '--if-match', etag])).code, 0)
    assert.equal((await cli(['pets', 'get', String(pet.id)])).code, 1)
    assert.equal((await cli(['pets', 'update', String(pet.id)])).code, 2, 'no change given')
  })

  it('prints "petstore: <status> <code>: <message>" for an API error and exits 1', async () => {
    const missing = await cli(['pets', 'get', '999999'])
    assert.equal(missing.code, 1)
    // The request id is the one the server's log line carries: what to quote when asking why.
    assert.match(missing.err[0]!, /^petstore: 404 not_found: There is no pet with id 999999\. \(request id [\w-]+\)$/)
    assert.equal(missing.err.length, 1)
    const unauthorized = await cli(['pets', 'list'], { ...env, PETSTORE_API_KEY: 'ps_test_wrong' })
    assert.equal(unauthorized.code, 1)
    assert.match(unauthorized.err[0]!, /^petstore: 401 unauthorized: /)
    const tooMany = await cli(['pets', 'list', '--limit', '101'])
    assert.equal(tooMany.code, 1)
    assert.match(tooMany.err[0]!, /^petstore: 400 invalid_parameter: .*limit/)
  })

  const mistakes: [string, string[], RegExp][] = [
    ['pets without a command', ['pets'], /pets needs a command/],
    ['an unknown pets command', ['pets', 'fly'], /unknown pets command "fly"/],
    ['create without --category-id', ['pets', 'create', '--name', 'Luna'], /^petstore: --category-id is required; usage: petstore pets create --name NAME --category-id N/],
    ['a mistyped flag', ['pets', 'list', '--limt', '3'], /^petstore: unknown option '--limt' \(did you mean --limit\?\)/],
    ['a category id that is not a number', ['pets', 'create', '--name', 'Rex', '--category-id', 'one'], /--category-id must be a positive integer/],
    ['an unknown status', ['pets', 'list', '--status', 'lost'], /--status must be one of available, pending, sold/],
    ['a limit that is not a number', ['pets', 'list', '--limit', 'ten'], /--limit/],
    ['an unknown flag', ['pets', 'list', '--colour'], /colour/],
    ['get without an id', ['pets', 'get'], /^petstore: missing ID; usage: petstore pets get ID$/],
    ['update without a change', ['pets', 'update', '1'], /needs at least one of --name, --category-id or --status/],
    ['get with an id that is not a number', ['pets', 'get', 'abc'], /ID must be a positive integer/],
    ['a category id beyond 2^53-1', ['pets', 'create', '--name', 'Rex', '--category-id', '9007199254740993'], /--category-id must be a positive integer/],
    ['a limit in exponent form', ['pets', 'list', '--limit', '1e1'], /--limit must be a positive integer/],
  ]
  for (const [what, argv, message] of mistakes) {
    it(`exits 2 with one line on stderr for ${what}`, async () => {
      const res = await cli(argv)
      assert.equal(res.code, 2)
      assert.equal(res.err.length, 1)
      assert.match(res.err[0]!, message)
    })
  }

  it('exits 2 naming PETSTORE_API_KEY when it is not set', async () => {
    const res = await cli(['pets', 'list'], { PETSTORE_URL: server.url })
    assert.equal(res.code, 2)
    assert.match(res.err[0]!, /PETSTORE_API_KEY/)
  })

  it('runs as an installed command: bin/petstore.js pets list', async () => {
    const { stdout } = await run(process.execPath, ['bin/petstore.js', 'pets', 'list', '--status', 'sold'], { env: { ...process.env, ...env } })
    assert.deepEqual(
      (JSON.parse(stdout) as Pet[]).map((pet) => pet.name),
      ['Rex', 'Bella'],
    )
  })
})
