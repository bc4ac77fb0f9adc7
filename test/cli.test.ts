import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { main } from '../src/cli/main.js'

const run = promisify(execFile)

describe('petstore command line', () => {
  let dir: string
  let env: Record<string, string>
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-cli-'))
    env = { DATABASE_URL: `sqlite:${join(dir, 'fresh', 'petstore.db')}` }
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  async function cli(...argv: string[]) {
    const out: string[] = []
    const err: string[] = []
    const code = await main(argv, { out: (l) => out.push(...l.split('\n')), err: (l) => err.push(l) }, env)
    return { code, out, err, json: () => JSON.parse(out.join('\n')) as unknown }
  }

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
    assert.match(res.out[0]!, /up to date/)
  })

  const mistakes: [string, string[], RegExp][] = [
    ['no command', [], /Usage/],
    ['an unknown command', ['frobnicate'], /unknown command/],
    ['keys create without --plan', ['keys', 'create'], /--plan/],
    ['an unknown plan', ['keys', 'create', '--plan', 'gold'], /unknown plan "gold"/],
    ['enterprise without limits', ['keys', 'create', '--plan', 'enterprise'], /--per-minute/],
    ['limits on a non-enterprise plan', ['keys', 'create', '--plan', 'free', '--per-minute', '5', '--per-day', '10'], /enterprise/],
    ['a non-numeric limit', ['keys', 'create', '--plan', 'enterprise', '--per-minute', 'lots', '--per-day', '10'], /--per-minute/],
    ['an unknown flag', ['keys', 'list', '--colour'], /colour/],
    ['revoke without an id', ['keys', 'revoke'], /usage/],
    ['revoke of a key that does not exist', ['keys', 'revoke', '999'], /no key with id 999/],
    ['set-plan without a plan', ['keys', 'set-plan', '2'], /usage/],
  ]
  for (const [what, argv, message] of mistakes) {
    it(`exits non-zero with one line on stderr for ${what}`, async () => {
      const res = await cli(...argv)
      assert.notEqual(res.code, 0)
      if (argv.length === 0) assert.match(res.out.join('\n'), message)
      else {
        assert.equal(res.err.length, 1)
        assert.match(res.err[0]!, message)
      }
    })
  }

  it('fails naming the variable when the environment is wrong', async () => {
    const code = await main(['keys', 'list'], { out: () => {}, err: (l) => assert.match(l, /PETSTORE_ENV/) }, { PETSTORE_ENV: 'moon' })
    assert.equal(code, 1)
  })

  it('runs as an installed command: bin/petstore.js keys create', async () => {
    const { stdout } = await run(process.execPath, ['bin/petstore.js', 'keys', 'create', '--plan', 'free'], {
      env: { ...process.env, ...env },
    })
    assert.match(stdout.split('\n')[0]!, /^ps_test_/)
  })
})
