// What a person starting the server reads: one log line naming where it serves, its
// docs, its store (never a password) and its environment; and, when the port is taken,
// which variable to change. Real server processes.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { createTestDatabase, needs } from './helpers/services.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** Starts src/server.ts with `env`; resolves with its stdout and stderr lines once it exits or has logged `until`. */
function runServer(env: Record<string, string>, until: RegExp): Promise<{ out: string[]; err: string[]; code: number | null }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  const out: string[] = []
  const err: string[] = []
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`no ${until} within 20 s; stdout:\n${out.join('\n')}\nstderr:\n${err.join('\n')}`))
    }, 20_000)
    const done = (code: number | null) => {
      clearTimeout(timer)
      resolve({ out, err, code })
    }
    createInterface({ input: child.stdout! }).on('line', (line) => {
      out.push(line)
      if (until.test(line)) {
        child.kill('SIGTERM')
        child.once('exit', () => done(null))
      }
    })
    createInterface({ input: child.stderr! }).on('line', (line) => err.push(line))
    child.once('exit', (code) => done(code))
  })
}

describe('starting the server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-startup-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('logs one line naming the URL, the docs, the store as an absolute path, and the environment', async () => {
    const { out } = await runServer({ PORT: '0', DATABASE_URL: 'sqlite:./nested/../petstore-startup.db', PETSTORE_ENV: 'staging' }, /petstore \(staging\) serving/)
    const line = out.map((l) => JSON.parse(l) as Record<string, string>).find((entry) => /serving/.test(entry.msg ?? ''))!
    assert.match(line.msg!, /^petstore \(staging\) serving http:\/\/127\.0\.0\.1:\d+\/v1, docs at http:\/\/127\.0\.0\.1:\d+\/docs, store sqlite:\/.+\/petstore-startup\.db$/)
    assert.equal(line.environment, 'staging')
    assert.equal(line.docs, `${line.url}/docs`)
    rmSync(join(process.cwd(), 'petstore-startup.db'), { force: true })
    for (const suffix of ['-wal', '-shm', '.secret-key']) rmSync(join(process.cwd(), `petstore-startup.db${suffix}`), { force: true })
  })

  it('writes lines for a person with LOG_FORMAT=pretty: level and message, not JSON', async () => {
    const { out } = await runServer({ PORT: '0', DATABASE_URL: `sqlite:${join(dir, 'pretty.db')}`, LOG_FORMAT: 'pretty' }, /serving/)
    const line = out.find((l) => /serving/.test(l))!
    assert.match(line, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: petstore \(development\) serving http:\/\/127\.0\.0\.1:\d+\/v1/)
    assert.throws(() => JSON.parse(line) as unknown)
  })

  it('names a PostgreSQL store without its password', async (t) => {
    if (!(await needs('postgres', 'the start-up line on PostgreSQL'))) return t.skip('PostgreSQL is not reachable')
    const database = await createTestDatabase()
    try {
      // Trust authentication ignores the password; the log must not show it.
      const url = database.url.replace('postgres@', 'postgres:hunter2@')
      const { out } = await runServer({ PORT: '0', DATABASE_URL: url }, /serving/)
      const line = out.find((l) => /serving/.test(l))!
      assert.ok(!out.join('\n').includes('hunter2'), 'no password in any line')
      assert.match(line, /store postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:5432\//)
      // Without PETSTORE_SECRET_KEY on a database other hosts may share, it says that each needs the same key.
      assert.ok(out.some((l) => /PETSTORE_SECRET_KEY is not set: .*every other process on this database/.test(l)), out.join('\n'))
      const keyed = await runServer({ PORT: '0', DATABASE_URL: url, PETSTORE_SECRET_KEY: Buffer.alloc(32, 7).toString('base64') }, /serving/)
      assert.ok(!keyed.out.some((l) => /PETSTORE_SECRET_KEY is not set/.test(l)), 'not with a key set')
    } finally {
      await database.drop()
    }
  })

  it('stops within 10 s with one line naming a store that cannot be opened, its secret masked', async () => {
    // A silent "PostgreSQL": it accepts connections and never answers.
    const silent = createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    try {
      const port = (silent.address() as AddressInfo).port
      const cases: [string, RegExp][] = [
        ['sqlite:/proc/nope/x.db', /^petstore: DATABASE_URL=sqlite:\/proc\/nope\/x\.db: cannot open the store: /],
        ['postgres:u:S3cretPW@127.0.0.1/db', /^petstore: DATABASE_URL=postgres:u:\*\*\*@127\.0\.0\.1\/db: cannot open the store: /],
        [`postgres://S3cretPW@127.0.0.1:${port}/db`, new RegExp(`^petstore: DATABASE_URL=postgres://\\*\\*\\*@127\\.0\\.0\\.1:${port}/db: cannot open the store: `)],
      ]
      for (const [url, line] of cases) {
        const started = performance.now()
        const { out, err, code } = await runServer({ PORT: '0', DATABASE_URL: url }, /serving/)
        assert.ok(performance.now() - started < 12_000, `${url}: stopped in ${Math.round(performance.now() - started)} ms`)
        assert.equal(code, 1, url)
        assert.equal(err.length, 1, `${url}: one line: ${err.join('\n')}`)
        assert.match(err[0]!, line)
        assert.ok(![...out, ...err].join('\n').includes('S3cretPW'), `${url}: the secret is never shown`)
      }
    } finally {
      silent.close()
    }
  })

  it('stops, naming REDIS_URL, when its database number is one the Redis has not (instead of using database 0)', async (t) => {
    if (!(await needs('redis', 'REDIS_URL database number'))) return t.skip('Redis is not reachable')
    for (const url of ['redis://127.0.0.1:6379/99', 'redis://127.0.0.1:6379?db=99']) {
      const { err, code } = await runServer({ PORT: '0', DATABASE_URL: `sqlite:${join(dir, 'redis-db.db')}`, REDIS_URL: url }, /serving/)
      assert.equal(code, 1, url)
      assert.match(err.join('\n'), /^petstore: REDIS_URL names database 99, which this Redis refuses/, url)
    }
  })

  it('refuses production without PETSTORE_SECRET_KEY before it makes or migrates the database', async () => {
    const file = join(dir, 'production-without-key.db')
    const { err, code } = await runServer({ PORT: '0', PETSTORE_ENV: 'production', DATABASE_URL: `sqlite:${file}`, PETSTORE_SECRET_KEY: '' }, /serving/)
    assert.equal(code, 1)
    assert.match(err.join('\n'), /PETSTORE_SECRET_KEY is required in production/)
    assert.equal(existsSync(file), false, 'no database was made')
  })

  it('says it applies migrations, and which, before it does', async () => {
    const { out } = await runServer({ PORT: '0', DATABASE_URL: `sqlite:${join(dir, 'migrated-at-start.db')}` }, /serving/)
    const said = out.findIndex((line) => /applying \d+ schema migrations \(2026-11-22-001/.test(line))
    assert.ok(said >= 0 && said < out.findIndex((line) => /serving/.test(line)), out.join('\n'))
  })

  it('logs one JSON line naming a Redis that never connected, its password masked, and serves', async () => {
    const { out } = await runServer({ PORT: '0', DATABASE_URL: `sqlite:${join(dir, 'no-redis.db')}`, REDIS_URL: 'redis://app:S3cretPW@127.0.0.1:1' }, /serving/)
    const lines = out.filter((l) => /Redis/.test(l)).map((l) => JSON.parse(l) as { level: number; msg: string; redis: string })
    assert.equal(lines.length, 1, out.join('\n'))
    assert.equal(lines[0]!.level, 50)
    assert.equal(lines[0]!.redis, 'redis://app:***@127.0.0.1:1')
    assert.match(lines[0]!.msg, /^Redis at redis:\/\/app:\*\*\*@127\.0\.0\.1:1 unreachable \(never connected to Redis\): rate limiting on this instance alone/)
    assert.ok(!out.join('\n').includes('S3cretPW'))
  })

  it('warns of a PETSTORE_ variable nothing reads, naming the one meant, and serves', async () => {
    const { out } = await runServer({ PORT: '0', DATABASE_URL: `sqlite:${join(dir, 'unread.db')}`, PETSTORE_WEBHOOK_MAX_ENDPOINT: '4' }, /serving/)
    const lines = out.map((l) => JSON.parse(l) as { level: number; msg: string })
    const warning = lines.find((line) => /PETSTORE_WEBHOOK_MAX_ENDPOINT /.test(line.msg))
    assert.equal(warning?.level, 40, 'a warning')
    assert.match(warning.msg, /not a setting, so nothing reads it: did you mean PETSTORE_WEBHOOK_MAX_ENDPOINTS\?/)
    assert.ok(lines.some((line) => /serving/.test(line.msg)))
  })

  it('warns that PETSTORE_TRUST_PROXY=true lets a client name its own address, and serves', async () => {
    for (const trust of ['true', '127.0.0.1']) {
      const { out } = await runServer({ PORT: '0', DATABASE_URL: `sqlite:${join(dir, 'trust.db')}`, PETSTORE_TRUST_PROXY: trust }, /serving/)
      const lines = out.map((l) => JSON.parse(l) as { level: number; msg: string })
      const warning = lines.find((line) => /PETSTORE_TRUST_PROXY/.test(line.msg))
      if (trust !== 'true') assert.equal(warning, undefined, out.join('\n'))
      else assert.match(warning?.msg ?? '', /client can name any address as its own .*PETSTORE_TRUST_PROXY=10\.0\.0\.5/)
      assert.ok(lines.some((line) => /serving/.test(line.msg)))
    }
  })

  it('says which variable to change when the port (or the metrics port) is taken, and exits 1', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    try {
      const port = String((blocker.address() as AddressInfo).port)
      const { err, code } = await runServer({ PORT: port, DATABASE_URL: `sqlite:${join(dir, 'taken.db')}` }, /serving/)
      assert.equal(code, 1)
      assert.deepEqual(err, [`petstore: port ${port} on 127.0.0.1 is already in use (EADDRINUSE): set PORT to another port, or PORT=0 for any free one`])
      const metrics = await runServer({ PORT: '0', PETSTORE_METRICS_PORT: port, DATABASE_URL: `sqlite:${join(dir, 'taken.db')}` }, /serving/)
      assert.equal(metrics.code, 1)
      assert.deepEqual(metrics.err, [`petstore: port ${port} on 127.0.0.1 is already in use (EADDRINUSE): set PETSTORE_METRICS_PORT to another port, or PETSTORE_METRICS_PORT=0 for any free one`])
    } finally {
      blocker.close()
    }
  })
})

describe('PETSTORE_METRICS_PORT', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-metrics-port-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it("serves GET /metrics on that port only, counting the API's requests, and stops with the server", async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: { ...process.env, LOG_LEVEL: 'info', PORT: '0', PETSTORE_METRICS_PORT: '0', DATABASE_URL: `sqlite:${join(dir, 'metrics.db')}` },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    try {
      const serving = await new Promise<{ url: string; metrics: string }>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no serving line within 20 s')), 20_000)
        createInterface({ input: child.stdout! }).on('line', (line) => {
          const entry = JSON.parse(line) as { msg: string; url: string; metrics: string }
          if (/serving/.test(entry.msg)) {
            clearTimeout(timer)
            resolve(entry)
          }
        })
      })
      assert.match(serving.metrics, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
      assert.notEqual(new URL(serving.metrics).port, new URL(serving.url).port)
      assert.equal((await fetch(`${serving.url}/healthz`)).status, 200)
      const onApiPort = await fetch(`${serving.url}/metrics`)
      assert.equal(onApiPort.status, 404, 'no metrics on the public port')
      assert.equal(((await onApiPort.json()) as { code: string }).code, 'not_found')
      const scrape = await fetch(serving.metrics)
      assert.equal(scrape.status, 200)
      assert.match(scrape.headers.get('content-type') ?? '', /^text\/plain/)
      assert.match(await scrape.text(), /^petstore_http_requests_total\{route="\/healthz",method="GET",status="200"\} 1$/m)
      assert.equal((await fetch(new URL('/v1/pets', serving.metrics))).status, 404, 'the metrics port serves nothing else')
      child.kill('SIGTERM')
      assert.equal(await exited, 0)
      await assert.rejects(fetch(serving.metrics), 'the metrics port closed with the server')
    } finally {
      child.kill('SIGKILL')
    }
  })
})

describe('paths outside /v1', () => {
  let server: TestServer
  before(async () => {
    server = await startTestServer()
  })
  after(() => server.close())

  for (const path of ['/', '/pets', '/v2/pets', '/api']) {
    it(`answers 404 for ${path}, pointing to /v1 and /docs`, async () => {
      const res = await server.request<{ code: string; message: string }>(path)
      assert.equal(res.status, 404)
      assert.equal(res.body.code, 'not_found')
      assert.match(res.body.message, /under \/v1 .*at \/docs/)
    })
  }

  it('does not add the hint inside /v1', async () => {
    const res = await server.request<{ message: string }>('/v1/nowhere', { headers: { authorization: `Bearer ${await server.createKey('free')}` } })
    assert.equal(res.status, 404)
    assert.equal(res.body.message, 'There is no route GET /v1/nowhere.')
  })
})

describe('.env in the working directory', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-dotenv-'))
  after(() => rmSync(dir, { recursive: true, force: true }))
  const repo = process.cwd()

  /** Runs `script` (a file of the built package) in `dir`; resolves with its output once `until` is logged (then SIGTERM) or it exits. */
  function runIn(args: string[], env: Record<string, string>, until?: RegExp): Promise<{ out: string; err: string; code: number | null }> {
    const child = spawn(process.execPath, args, { cwd: dir, env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        reject(new Error(`no ${String(until)} within 20 s; stdout:\n${out}\nstderr:\n${err}`))
      }, 20_000)
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        if (until?.test(out)) child.kill('SIGTERM')
      })
      child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()))
      child.once('exit', (code) => {
        clearTimeout(timer)
        resolve({ out, err, code })
      })
    })
  }

  it('npm start (dist/server.js) and the command line read it; a variable set in the environment wins', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo
        probe.close(() => resolve(free))
      })
    })
    writeFileSync(join(dir, '.env'), `# as in .env.example\nPORT=${port}\nDATABASE_URL=sqlite:./from-dotenv.db\nPETSTORE_ENV=production\n`)
    const server = await runIn([join(repo, 'dist/server.js')], { PETSTORE_ENV: 'staging' }, /serving/)
    assert.match(server.out, new RegExp(`petstore \\(staging\\) serving http://127\\.0\\.0\\.1:${port}/v1, docs at .*store sqlite:.*from-dotenv\\.db`))
    const cli = await runIn([join(repo, 'bin/petstore.js'), 'keys', 'create', '--plan', 'free'], {})
    assert.equal(cli.code, 0, cli.err)
    assert.match(cli.out, /^ps_live_/, 'PETSTORE_ENV=production from .env: a live key')
    assert.match(cli.err, /database sqlite:.*from-dotenv\.db/)
  })
})
