import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Pet } from '../src/schemas/pet.js'
import { runCli } from './helpers/cli.js'
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
    for (const field of ['id', 'name', 'plan', 'prefix', 'limits', 'createdAt', 'lastUsedAt', 'revokedAt']) assert.ok(field in keys[0]!, field)
    assert.ok(!res.out.join('\n').includes(created.out[0]!))
    assert.ok(keys.some((k) => created.out[0]!.startsWith(k.prefix as string)))
  })

  it('keys list prints a table', async () => {
    const res = await cli('keys', 'list')
    assert.match(res.out[0]!, /^ID\tPREFIX\tPLAN/)
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
    ['keys create without --plan', ['keys', 'create'], /--plan/],
    ['an unknown plan', ['keys', 'create', '--plan', 'gold'], /unknown plan "gold"/],
    ['enterprise without limits', ['keys', 'create', '--plan', 'enterprise'], /--per-minute/],
    ['limits on a non-enterprise plan', ['keys', 'create', '--plan', 'free', '--per-minute', '5', '--per-day', '10'], /enterprise/],
    ['a non-numeric limit', ['keys', 'create', '--plan', 'enterprise', '--per-minute', 'lots', '--per-day', '10'], /--per-minute/],
    ['an unknown flag', ['keys', 'list', '--colour'], /colour/],
    ['revoke without an id', ['keys', 'revoke'], /^petstore: missing ID; usage: petstore keys revoke ID$/],
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

  for (const argv of [['keys', '--help'], ['keys', 'create', '--help'], ['pets', '--help'], ['pets', 'list', '-h'], ['serve', '--help'], ['migrate', '--help']]) {
    it(`prints the usage of the command for ${argv.join(' ')} and exits 0`, async () => {
      const res = await cli(...argv)
      assert.equal(res.code, 0, res.err.join('\n'))
      assert.deepEqual(res.err, [])
      assert.match(res.out[0]!, new RegExp(`^Usage: petstore ${argv.filter((arg) => !arg.startsWith('-')).join(' ')}\\b`))
    })
  }

  it('keys create --help is that command alone, a line per flag', async () => {
    const res = await cli('keys', 'create', '--help')
    assert.equal(res.out[0], 'Usage: petstore keys create --plan PLAN [--name NAME] [--per-minute N] [--per-day N] [--scopes SCOPES] [--expires-in DURATION] [--json]')
    for (const flag of ['--plan PLAN', '--name NAME', '--per-minute N', '--per-day N', '--scopes SCOPES', '--expires-in DURATION', '--json', '-h, --help']) {
      assert.ok(res.out.some((line) => line.startsWith(`  ${flag} `)), `${flag} in\n${res.out.join('\n')}`)
    }
    assert.ok(!res.out.some((line) => line.includes('keys revoke')), 'not the whole group')
    assert.match(res.out.find((line) => line.startsWith('  --plan'))!, /free, pro, business or enterprise \(required\)/)
  })

  it('petstore keys --help lists every keys command and nothing else', async () => {
    const res = await cli('keys', '--help')
    const commands = res.out.filter((line) => /^ {2}\S/.test(line)).map((line) => line.trim().split(/\s{2,}/)[0])
    assert.deepEqual(commands, ['keys create', 'keys list', 'keys show', 'keys revoke', 'keys disable', 'keys enable', 'keys set-plan', 'keys roll', 'keys unban', 'keys usage'])
  })

  const guesses: [string[], string][] = [
    [['keys', 'create', '--plna', 'free'], "unknown option '--plna' (did you mean --plan?)"],
    [['keys', 'list', '--jsno'], "unknown option '--jsno' (did you mean --json?)"],
    [['keys', 'crate'], 'unknown keys command "crate" (did you mean create?)'],
    [['serv'], 'unknown command "serv" (did you mean serve?)'],
    [['keys', 'list', '--colour'], "unknown option '--colour'; usage: petstore keys list [--json]"],
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
    const id = /Created key (\d+)/.exec(created.out[1]!)![1]!
    assert.deepEqual(created.err, [`petstore: database ${env.DATABASE_URL}`])
    const res = await cli('keys', 'show', id)
    assert.equal(res.code, 0)
    assert.deepEqual(res.out.slice(0, 6), [
      `id         ${id}`,
      'name       shown',
      `prefix     ${created.out[0]!.slice(0, 12)}…`,
      'plan       business (1000/min, 100000/day)',
      'status     active',
      'scopes     pets:read pets:write orders:read orders:write usage:read events:read webhooks:read webhooks:write',
    ])
    assert.ok(!res.out.join('\n').includes(created.out[0]!))
    assert.deepEqual(res.err, [`petstore: database ${env.DATABASE_URL}`])
    const json = (await cli('keys', 'show', id, '--json')).json<{ id: number; name: string }>()
    assert.deepEqual([json.id, json.name], [Number(id), 'shown'])
  })

  it('makes keys with scopes and an expiry, rolls, disables and enables them, and prints their usage', async () => {
    const made = (await cli('keys', 'create', '--plan', 'pro', '--scopes', 'read_only', '--expires-in', '30d', '--json')).json<{ id: number; scopes: string[]; expiresAt: string; status: string }>()
    assert.deepEqual(made.scopes, ['pets:read', 'orders:read', 'usage:read', 'events:read', 'webhooks:read'])
    assert.ok(Math.abs(Date.parse(made.expiresAt) - Date.now() - 30 * 86_400_000) < 60_000)
    assert.equal(made.status, 'active')
    // Presets and scopes together, as the README's operator key.
    const ops = (await cli('keys', 'create', '--plan', 'business', '--scopes', 'all,keys:write', '--json')).json<{ scopes: string[] }>()
    assert.deepEqual(ops.scopes, ['pets:read', 'pets:write', 'orders:read', 'orders:write', 'usage:read', 'events:read', 'webhooks:read', 'webhooks:write', 'keys:read', 'keys:write'])
    const rolled = await cli('keys', 'roll', String(made.id), '--grace', '0')
    assert.equal(rolled.code, 0, rolled.err.join('\n'))
    assert.match(rolled.out[0]!, /^ps_test_/)
    assert.match(rolled.out[1]!, new RegExp(`in place of key ${made.id}, which works until`))
    const old = (await cli('keys', 'show', String(made.id), '--json')).json<{ status: string; replacedBy: number }>()
    assert.equal(old.status, 'expired')
    assert.deepEqual((await cli('keys', 'disable', String(old.replacedBy))).out, [`Key ${old.replacedBy} is disabled.`])
    assert.deepEqual((await cli('keys', 'enable', String(old.replacedBy))).out, [`Key ${old.replacedBy} is active.`])
    const usage = await cli('keys', 'usage', String(old.replacedBy))
    assert.equal(usage.code, 0)
    assert.deepEqual(usage.out, [`No requests from key ${old.replacedBy} in the last 7 days.`])
    const table = await cli('keys', 'list')
    assert.match(table.out[0]!, /^ID\tPREFIX\tPLAN\tPER MIN\tPER DAY\tSTATUS\tEXPIRES\tLAST USED\tSCOPES\tNAME$/)
    assert.ok(table.out.some((line) => line.startsWith(`${made.id}\t`) && line.includes('\texpired\t')), table.out.join('\n'))
  })

  it('refuses a bad scope or duration (2), and an unban it cannot reach (1)', async () => {
    const scope = await cli('keys', 'create', '--plan', 'free', '--scopes', 'pets:fly')
    assert.deepEqual([scope.code, scope.err], [2, ['petstore: --scopes: unknown scope "pets:fly": use pets:read, pets:write, orders:read, orders:write, usage:read, events:read, webhooks:read, webhooks:write, keys:read, keys:write, or a preset (all, read_only)']])
    const expiry = await cli('keys', 'create', '--plan', 'free', '--expires-in', '30 days')
    assert.equal(expiry.code, 2)
    assert.match(expiry.err[0]!, /--expires-in must be a number and a unit/)
    assert.equal((await cli('keys', 'create', '--plan', 'free', '--expires-in', '400d')).code, 2, 'at most a year')
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
