import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, loadConfig, redactUrl, SETTINGS, trustProxyWarning } from '../../src/config.js'
import { openStoreFromConfig } from '../../src/db/from-config.js'

describe('config', () => {
  it('reads PETSTORE_WEBHOOK_ALLOW_CIDRS: CIDRs or addresses, each with an optional port; PETSTORE_WEBHOOK_MAX_ENDPOINTS, _PER_ENDPOINT and _MAX_LAG', () => {
    const entries = ['10.0.0.0/8', '127.0.0.1:4000', '10.0.0.0/8:8443', '[::1]:4000', '[fd00::/8]:443', 'fd00::/8', '::1']
    assert.deepEqual(loadConfig({ PETSTORE_WEBHOOK_ALLOW_CIDRS: entries.join(', ') }).webhookAllowCidrs, entries)
    for (const bad of ['localhost', '127.0.0.1:0', '127.0.0.1:70000', '10.0.0.0/33', '::1:4000x']) {
      assert.throws(() => loadConfig({ PETSTORE_WEBHOOK_ALLOW_CIDRS: bad }), /PETSTORE_WEBHOOK_ALLOW_CIDRS must be/, bad)
    }
    assert.equal(loadConfig({}).webhookMaxEndpoints, 16)
    assert.equal(loadConfig({ PETSTORE_WEBHOOK_MAX_ENDPOINTS: '40' }).webhookMaxEndpoints, 40)
    assert.throws(() => loadConfig({ PETSTORE_WEBHOOK_MAX_ENDPOINTS: '0' }), /PETSTORE_WEBHOOK_MAX_ENDPOINTS/)
    assert.equal(loadConfig({}).webhookPerEndpoint, 8)
    assert.throws(() => loadConfig({ PETSTORE_WEBHOOK_PER_ENDPOINT: '65' }), /PETSTORE_WEBHOOK_PER_ENDPOINT/)
    assert.equal(loadConfig({}).webhookMaxLag, 60)
    assert.equal(loadConfig({ PETSTORE_WEBHOOK_MAX_LAG: '0' }).webhookMaxLag, 0, 'never paced')
    assert.throws(() => loadConfig({ PETSTORE_WEBHOOK_MAX_LAG: '-1' }), /PETSTORE_WEBHOOK_MAX_LAG/)
  })

  it('defaults to 127.0.0.1:8080, SQLite in the project\'s data/, development, in-memory limits', () => {
    const config = loadConfig({})
    assert.equal(config.host, '127.0.0.1')
    assert.equal(config.port, 8080)
    // The project's folder, wherever the command runs: a subfolder's `keys create` used to make a second database.
    assert.equal(config.databaseUrl, `sqlite:${join(process.cwd(), 'data', 'petstore.db')}`)
    const elsewhere = process.cwd()
    try {
      process.chdir(join(elsewhere, 'src'))
      assert.equal(loadConfig({}).databaseUrl, config.databaseUrl)
      // An explicit relative path is the working directory's, made absolute so that messages name the file.
      assert.equal(loadConfig({ DATABASE_URL: 'sqlite:./x.db' }).databaseUrl, `sqlite:${join(elsewhere, 'src', 'x.db')}`)
    } finally {
      process.chdir(elsewhere)
    }
    assert.equal(config.redisUrl, undefined)
    assert.equal(config.environment, 'development')
    assert.equal(config.banAfter, 20)
    assert.equal(config.banSeconds, 900)
    assert.equal(config.dispatch, 'on', 'each server delivers webhooks unless told otherwise')
    assert.equal(config.webhookLease, 60)
    assert.ok(Object.isFrozen(config))
  })

  it('reads PETSTORE_WEBHOOK_DNS_SERVERS: addresses, each with an optional port; none: /etc/resolv.conf', () => {
    assert.deepEqual(loadConfig({}).webhookDnsServers, [])
    const entries = ['10.0.0.2', '10.0.0.2:5353', '[fd00::53]:53', 'fd00::53']
    assert.deepEqual(loadConfig({ PETSTORE_WEBHOOK_DNS_SERVERS: entries.join(', ') }).webhookDnsServers, entries)
    for (const bad of ['dns.example', '10.0.0.0/8', '10.0.0.2:0', '10.0.0.2:70000', '[fd00::53]x']) {
      assert.throws(() => loadConfig({ PETSTORE_WEBHOOK_DNS_SERVERS: bad }), /PETSTORE_WEBHOOK_DNS_SERVERS must be/, bad)
    }
  })

  it('takes LOG_FORMAT json (the default) or pretty, and refuses pretty in production', () => {
    assert.equal(loadConfig({}).logFormat, 'json')
    assert.equal(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty')
    assert.throws(() => loadConfig({ LOG_FORMAT: 'colour' }), /LOG_FORMAT/)
    assert.throws(() => loadConfig({ LOG_FORMAT: 'pretty', PETSTORE_ENV: 'production' }), /LOG_FORMAT=pretty is for development/)
  })

  it('reads every variable', () => {
    const config = loadConfig({
      HOST: '0.0.0.0',
      PORT: '9000',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/petstore',
      REDIS_URL: 'redis://127.0.0.1:6379',
      PETSTORE_ENV: 'production',
      PETSTORE_PUBLIC_URL: 'https://pets.example.com/v1/',
      PETSTORE_BAN_AFTER: '5',
      PETSTORE_BAN_SECONDS: '60',
      PETSTORE_TRUST_PROXY: 'true',
      PETSTORE_WEBHOOK_ALLOW_CIDRS: '10.0.0.0/8, 127.0.0.0/8',
      PETSTORE_DISPATCH: 'off',
      PETSTORE_WEBHOOK_LEASE: '30',
    })
    assert.equal(config.port, 9000)
    assert.deepEqual(config.webhookAllowCidrs, ['10.0.0.0/8', '127.0.0.0/8'])
    assert.equal(config.dispatch, 'off')
    assert.equal(config.webhookLease, 30)
    assert.equal(config.environment, 'production')
    assert.equal(config.publicUrl, 'https://pets.example.com/v1')
    assert.equal(config.banAfter, 5)
    assert.equal(config.trustProxy, true)
  })

  it('warns of PETSTORE_TRUST_PROXY when it trusts every hop: true, or a /0 among its ranges', () => {
    for (const trusting of ['true', '0.0.0.0/0', '10.0.0.5, ::/0']) assert.match(trustProxyWarning(loadConfig({ PETSTORE_TRUST_PROXY: trusting })) ?? '', /a client can name any address as its own/, trusting)
    for (const trusting of ['false', '10.0.0.5', '10.0.0.0/8,fd00::/8']) assert.equal(trustProxyWarning(loadConfig({ PETSTORE_TRUST_PROXY: trusting })), undefined, trusting)
  })

  it('warns of each PETSTORE_ variable nothing reads, naming the setting it most likely meant', () => {
    assert.deepEqual(loadConfig({ PETSTORE_WORKERS: '1', PETSTORE_URL: 'http://x/v1', PETSTORE_API_KEY: 'k' }).unreadSettings, [])
    assert.deepEqual(loadConfig({ PETSTORE_WEBHOOK_MAX_ENDPOINT: '4', PETSTORE_ENVIRONMENT: 'production', PETSTORE_COLOUR: 'blue', OTHER: '1' }).unreadSettings, [
      'PETSTORE_COLOUR is set but is not a setting, so nothing reads it (every setting is in .env.example and the README)',
      'PETSTORE_ENVIRONMENT is set but is not a setting, so nothing reads it (every setting is in .env.example and the README)',
      'PETSTORE_WEBHOOK_MAX_ENDPOINT is set but is not a setting, so nothing reads it: did you mean PETSTORE_WEBHOOK_MAX_ENDPOINTS? (every setting is in .env.example and the README)',
    ])
  })

  it('knows every PETSTORE_ variable the code reads, and each is documented', () => {
    const files = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : []))
    const read = new Set(files('src').flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/\b(PETSTORE_[A-Z0-9_]*[A-Z0-9])\b/g)].map((match) => match[1]!)))
    assert.deepEqual([...read].filter((name) => !SETTINGS.includes(name)), [], 'named in src/ but not in SETTINGS: it would be warned of as unread')
    const documented = readFileSync('docs/operations.md', 'utf8') + readFileSync('README.md', 'utf8')
    assert.deepEqual(SETTINGS.filter((name) => !documented.includes(name)), [], 'in SETTINGS but in neither docs/operations.md nor the README')
    const example = readFileSync('.env.example', 'utf8')
    assert.deepEqual(SETTINGS.filter((name) => !new RegExp(`^(# )?${name}=`, 'm').test(example)), [], '.env.example says it lists every setting')
    // .env.example, loaded as it is, is a valid configuration with nothing unread.
    const values = Object.fromEntries([...example.matchAll(/^([A-Z_]+)=(.*)$/gm)].map((match) => [match[1]!, match[2]!]))
    assert.deepEqual(loadConfig(values).unreadSettings, [])
  })

  it('fails fast, naming the variable that is wrong', () => {
    const cases: Record<string, string>[] = [
      { PORT: 'eighty' },
      { PORT: '70000' },
      { PETSTORE_ENV: 'prod' },
      { PETSTORE_DISPATCH: 'yes' },
      { PETSTORE_WEBHOOK_LEASE: '0' },
      { DATABASE_URL: 'mysql://x' },
      { DATABASE_URL: 'sqlite:' },
      { REDIS_URL: 'http://127.0.0.1' },
      { REDIS_URL: 'redis://127.0.0.1:6379/abc' },
      { REDIS_URL: 'redis://127.0.0.1:6379?db=one' },
      { PETSTORE_PUBLIC_URL: 'https://pets.example.com' },
      { PETSTORE_BAN_AFTER: '0' },
    ]
    for (const env of cases) {
      const name = Object.keys(env)[0]!
      assert.throws(() => loadConfig(env), (e: unknown) => e instanceof ConfigError && e.message.includes(name), name)
    }
  })

  it('names both accepted forms of DATABASE_URL, and echoes only the scheme of a wrong one', () => {
    for (const raw of ['mysql://root:hunter2@db/pets', 'pets.db', './data/petstore.db']) {
      assert.throws(
        () => loadConfig({ DATABASE_URL: raw }),
        (e: unknown) => e instanceof ConfigError && /sqlite:PATH/.test(e.message) && /postgres:\/\//.test(e.message) && !e.message.includes('hunter2'),
        raw,
      )
    }
  })

  it('names DATABASE_URL, without its password, when the store cannot be opened at start', async () => {
    await assert.rejects(
      openStoreFromConfig({ databaseUrl: 'postgres://postgres:hunter2@127.0.0.1:1/petstore' }),
      (e: unknown) => e instanceof Error && /^DATABASE_URL=postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/petstore: cannot open the store: .*ECONNREFUSED/.test(e.message),
    )
  })

  it('never echoes the password of a DATABASE_URL or REDIS_URL that fails to parse', () => {
    for (const [name, raw] of [
      ['REDIS_URL', 'redis://:hunter2@cache.internal:notaport'],
      ['DATABASE_URL', 'postgres://petstore:hunter2@[::1/petstore'],
      ['DATABASE_URL', 'postgres://petstore:hun/ter2@db.internal:bad/petstore'],
    ] as const) {
      assert.throws(
        () => loadConfig({ [name]: raw }),
        (e: unknown) => e instanceof ConfigError && e.message.includes(name) && !/hunter2|hun\/ter2/.test(e.message),
        raw,
      )
    }
  })

  it('masks a password given as a query parameter when the store cannot be opened', async () => {
    await assert.rejects(
      openStoreFromConfig({ databaseUrl: 'postgres://postgres@127.0.0.1:1/petstore?password=hunter2&sslmode=disable' }),
      (e: unknown) => e instanceof Error && e.message.startsWith('DATABASE_URL=postgres://***@127.0.0.1:1/petstore?password=***&sslmode=disable: cannot open'),
    )
  })
})

describe('redactUrl', () => {
  it('masks userinfo passwords and secret query parameters, and nothing else', () => {
    const cases: [string, string][] = [
      ['postgres://app:hunter2@db:5432/pets', 'postgres://app:***@db:5432/pets'],
      ['postgres://app:p@ss/w#rd@db/pets', 'postgres://app:***@db/pets'],
      ['redis://:hunter2@cache:6379/0', 'redis://:***@cache:6379/0'],
      ['postgres://db/pets?sslpassword=a&application_name=petstore', 'postgres://db/pets?sslpassword=***&application_name=petstore'],
      ['rediss://cache.example:6380?token=abc', 'rediss://cache.example:6380?token=***'],
      ['postgres://db:5432/pets', 'postgres://db:5432/pets'],
      ['sqlite:./data/petstore.db', 'sqlite:./data/petstore.db'],
    ]
    for (const [raw, expected] of cases) assert.equal(redactUrl(raw), expected, raw)
  })

  it('masks a user name given alone: it may be a token', () => {
    assert.equal(redactUrl('postgres://app@db:5432/pets'), 'postgres://***@db:5432/pets')
    assert.equal(redactUrl('rediss://tok_9f8e7d6c5b4a@cache.example:6380'), 'rediss://***@cache.example:6380')
    assert.equal(redactUrl('postgres://app@db/pets?sslmode=require&password=hunter2'), 'postgres://***@db/pets?sslmode=require&password=***')
  })

  it('never echoes the secret of a URL that does not parse, whatever its form', () => {
    const secret = 'S3cretPW'
    const forms = [
      `postgres:u:${secret}@127.0.0.1/db`, // no //
      `postgres:/u:${secret}@127.0.0.1/db`, // one /
      `postgres:///u:${secret}@127.0.0.1/db`, // three
      `u:${secret}@127.0.0.1/db`, // no scheme
      `${secret}@127.0.0.1/db`, // no scheme, a token as the user
      `postgres:${secret}@127.0.0.1/db`, // a token as the user, no //
      `postgres://u:${secret}@[::1/db`, // a broken IPv6 literal
      `postgres://u:${secret}@db:port/db`, // a port that is not a number
      `postgres://u:p@ss${secret}@db/db`, // an @ in the password
      `postgres://u:${secret}/x@db/db`, // a / in the password
      `postgres://u:${secret}#x@db/db`, // a # in the password
      `postgres://u:${secret}?x@db/db`, // a ? in the password
      `postgres://u:${secret} @db/db`, // a space
      `postgres://u:${secret}\n@db/db`, // a control character
      ` postgres://u:${secret}@db/db`, // a leading space
      `postgres://${secret}@db/db`, // a token as the user
      `postgres://@${secret}@db/db`, // an empty user, then the token
      `postgres://db/db?password=${secret}`,
      `postgres://db/db?sslpassword=${secret}&x=1`,
      `postgres://db/db?x=1&auth_token=${secret}`,
      `redis://:${secret}@cache:6379`,
      `redis:${secret}@cache`,
    ]
    for (const form of forms) {
      const shown = redactUrl(form)
      assert.doesNotMatch(shown, new RegExp(secret), `${JSON.stringify(form)} showed as ${JSON.stringify(shown)}`)
      assert.match(shown, /\*\*\*/, `${JSON.stringify(form)}: says something was masked`)
    }
  })
})
