// The only reader of process.env: every setting is validated here, once, and the
// process refuses to start naming the variable that is wrong.
import ipaddr from 'ipaddr.js'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { closest } from './closest.js'

export type Environment = 'production' | 'staging' | 'development'

export interface Config {
  readonly host: string
  readonly port: number
  /** `sqlite:PATH` or `postgres://…` */
  readonly databaseUrl: string
  readonly redisUrl: string | undefined
  /** Prefix of every Redis key, so several deployments (or test runs) can share one server. */
  readonly redisPrefix: string
  /** What to do while Redis cannot be reached: keep serving on per-instance counters, or answer 503. */
  readonly redisFailure: 'open' | 'closed'
  /** Processes sharing the port (node:cluster). */
  readonly workers: number
  readonly environment: Environment
  readonly publicUrl: string
  readonly stagingUrl: string
  readonly banAfter: number
  readonly banSeconds: number
  /** Fastify's trustProxy: false, true (every hop: any client names its own address), or proxy addresses/CIDRs. */
  readonly trustProxy: boolean | string
  readonly logLevel: string
  /** `json`: a JSON line per event, for machines; `pretty`: coloured lines for a person at a terminal (pino-pretty, development only). */
  readonly logFormat: 'json' | 'pretty'
  /** Seconds SIGTERM waits for in-flight requests before the process exits anyway. */
  readonly shutdownTimeout: number
  /** Seconds the headers of a request may take to arrive; a whole request; an idle keep-alive connection stays open. */
  readonly headersTimeout: number
  readonly requestTimeout: number
  readonly keepAliveTimeout: number
  /** Seconds the service may take to answer a request once it has arrived: the one deadline for every wait behind it (a lost database, a queue). */
  readonly requestDeadline: number
  /** Connections one client address may hold open at once; 0: no limit (behind a proxy, every client has its address). */
  readonly maxConnectionsPerIp: number
  /** Address ranges webhooks may be sent to although not public (tests, a private network): CIDRs. */
  readonly webhookAllowCidrs: readonly string[]
  /** DNS servers webhook hosts are asked of (`address` or `address:port`); empty: those of /etc/resolv.conf. */
  readonly webhookDnsServers: readonly string[]
  /** `on`: this process delivers webhooks beside serving; `off`: a `petstore dispatch` process does. */
  readonly dispatch: 'on' | 'off'
  /** Seconds a dispatcher holds a delivery it claimed: a dispatcher that dies holding one, another retries after this long. */
  readonly webhookLease: number
  /** The main key that seals webhook signing secrets (base64 of 32 bytes); required in production (secrets/secret-box.ts). */
  readonly secretKey: string | undefined
  /** Main keys of before a rotation, to open what they sealed until `npm run reseal-secrets` has run. */
  readonly previousSecretKeys: readonly string[]
  /** Webhook endpoints an account may have: each costs a socket (or a few) whenever the events it takes are delivered. */
  readonly webhookMaxEndpoints: number
  /** Categories the service keeps: they are shared by every account, and every client that names them by name reads them all. */
  readonly maxCategories: number
  /** Live keys (not revoked, not expired) an account may have for its keys to make another over the API. */
  readonly maxKeys: number
  /** Deliveries to one endpoint under way at once (across the dispatchers, as each claim sees them). */
  readonly webhookPerEndpoint: number
  /** Seconds the oldest webhook waiting may get: writes that make events are paced from a quarter of it (webhooks/write-pacing.ts); 0: never paced. */
  readonly webhookMaxLag: number
  /** `petstore dispatch` serves GET /metrics on this port (of HOST) when set; it serves nothing by default. */
  readonly dispatchMetricsPort: number | undefined
  /** The API serves GET /metrics on this port (of HOST) instead of PORT, when set. */
  readonly metricsPort: number | undefined
  /** A warning for each PETSTORE_ variable that is set and that nothing reads (a typo, or a setting of another release), naming the one it most likely meant. */
  readonly unreadSettings: readonly string[]
}

/**
 * Reads `.env` in the working directory into the environment, when there is one, as
 * `npm start` and the command line do: a variable already set in the environment wins
 * (Node's own parser, the --env-file format). Call it before loadConfig.
 */
export function loadDotEnv(file = '.env'): boolean {
  if (!existsSync(file)) return false
  process.loadEnvFile(file)
  return true
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

type Env = Readonly<Record<string, string | undefined>>

const ENVIRONMENTS: readonly Environment[] = ['production', 'staging', 'development']
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

export function loadConfig(env: Env = process.env): Config {
  const environment = oneOf(env, 'PETSTORE_ENV', ENVIRONMENTS, 'development')
  const config: Config = Object.freeze({
    host: env.HOST || '127.0.0.1',
    port: integer(env, 'PORT', 8080, 0, 65535),
    databaseUrl: databaseUrl(env),
    redisUrl: redisUrl(env),
    redisPrefix: env.PETSTORE_REDIS_PREFIX || 'petstore',
    redisFailure: oneOf(env, 'PETSTORE_REDIS_FAILURE', ['open', 'closed'] as const, 'open'),
    workers: integer(env, 'PETSTORE_WORKERS', 1, 1, 256),
    environment,
    publicUrl: baseUrl(env, 'PETSTORE_PUBLIC_URL', 'https://api.petstore.example/v1'),
    stagingUrl: baseUrl(env, 'PETSTORE_STAGING_URL', 'https://staging.api.petstore.example/v1'),
    banAfter: integer(env, 'PETSTORE_BAN_AFTER', 20, 1, 1_000_000),
    banSeconds: integer(env, 'PETSTORE_BAN_SECONDS', 900, 1, 86_400 * 30),
    trustProxy: trustProxy(env),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    logFormat: logFormat(env, environment),
    shutdownTimeout: integer(env, 'PETSTORE_SHUTDOWN_TIMEOUT', 10, 1, 600),
    headersTimeout: integer(env, 'PETSTORE_HEADERS_TIMEOUT', 10, 1, 600),
    requestTimeout: integer(env, 'PETSTORE_REQUEST_TIMEOUT', 30, 1, 600),
    keepAliveTimeout: integer(env, 'PETSTORE_KEEP_ALIVE_TIMEOUT', 5, 1, 600),
    requestDeadline: integer(env, 'PETSTORE_REQUEST_DEADLINE', 7, 1, 600),
    // Behind a proxy every connection comes from the proxy's address: no limit unless set.
    maxConnectionsPerIp: integer(env, 'PETSTORE_MAX_CONNECTIONS_PER_IP', trustProxy(env) === false ? 128 : 0, 0, 1_000_000),
    webhookAllowCidrs: cidrs(env, 'PETSTORE_WEBHOOK_ALLOW_CIDRS'),
    webhookDnsServers: dnsServers(env, 'PETSTORE_WEBHOOK_DNS_SERVERS'),
    dispatch: oneOf(env, 'PETSTORE_DISPATCH', ['on', 'off'] as const, 'on'),
    webhookLease: integer(env, 'PETSTORE_WEBHOOK_LEASE', 60, 1, 3600),
    webhookMaxEndpoints: integer(env, 'PETSTORE_WEBHOOK_MAX_ENDPOINTS', 16, 1, 10_000),
    maxCategories: integer(env, 'PETSTORE_MAX_CATEGORIES', 500, 1, 100_000),
    maxKeys: integer(env, 'PETSTORE_MAX_KEYS', 100, 1, 100_000),
    webhookPerEndpoint: integer(env, 'PETSTORE_WEBHOOK_PER_ENDPOINT', 8, 1, 64),
    webhookMaxLag: integer(env, 'PETSTORE_WEBHOOK_MAX_LAG', 60, 0, 86_400),
    dispatchMetricsPort: env.PETSTORE_DISPATCH_METRICS_PORT ? integer(env, 'PETSTORE_DISPATCH_METRICS_PORT', 0, 1, 65535) : undefined,
    metricsPort: env.PETSTORE_METRICS_PORT ? integer(env, 'PETSTORE_METRICS_PORT', 0, 0, 65535) : undefined,
    secretKey: env.PETSTORE_SECRET_KEY || undefined,
    previousSecretKeys: commaList(env, 'PETSTORE_SECRET_KEY_PREVIOUS'),
    unreadSettings: unreadSettings(env),
  })
  // Several processes with in-memory counters would each allow the whole limit.
  if (config.workers > 1 && !config.redisUrl) {
    throw new ConfigError(
      `PETSTORE_WORKERS=${config.workers} needs REDIS_URL: each worker would keep its own rate-limit counters, multiplying every limit by ${config.workers}`,
    )
  }
  return config
}

/** Every PETSTORE_ variable that the service, `petstore dispatch` or the command line reads. */
export const SETTINGS: readonly string[] = [
  'PETSTORE_API_KEY',
  'PETSTORE_BAN_AFTER',
  'PETSTORE_BAN_SECONDS',
  'PETSTORE_DISPATCH',
  'PETSTORE_DISPATCH_METRICS_PORT',
  'PETSTORE_ENV',
  'PETSTORE_HEADERS_TIMEOUT',
  'PETSTORE_KEEP_ALIVE_TIMEOUT',
  'PETSTORE_MAX_CATEGORIES',
  'PETSTORE_MAX_CONNECTIONS_PER_IP',
  'PETSTORE_MAX_KEYS',
  'PETSTORE_METRICS_PORT',
  'PETSTORE_PUBLIC_URL',
  'PETSTORE_REDIS_FAILURE',
  'PETSTORE_REDIS_PREFIX',
  'PETSTORE_REQUEST_DEADLINE',
  'PETSTORE_REQUEST_TIMEOUT',
  'PETSTORE_SECRET_KEY',
  'PETSTORE_SECRET_KEY_PREVIOUS',
  'PETSTORE_SHUTDOWN_TIMEOUT',
  'PETSTORE_STAGING_URL',
  'PETSTORE_TRUST_PROXY',
  'PETSTORE_URL',
  'PETSTORE_WEBHOOK_ALLOW_CIDRS',
  'PETSTORE_WEBHOOK_DNS_SERVERS',
  'PETSTORE_WEBHOOK_LEASE',
  'PETSTORE_WEBHOOK_MAX_ENDPOINTS',
  'PETSTORE_WEBHOOK_MAX_LAG',
  'PETSTORE_WEBHOOK_PER_ENDPOINT',
  'PETSTORE_WORKERS',
]

// A mistyped name would otherwise be silently ignored, and its default used: a
// warning at start, not a refusal, since an environment may hold variables of other
// tools and releases that share the prefix.
function unreadSettings(env: Env): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith('PETSTORE_') && !SETTINGS.includes(name))
    .sort()
    .map((name) => {
      const meant = closest(name, SETTINGS)
      return `${name} is set but is not a setting, so nothing reads it${meant ? `: did you mean ${meant}?` : ''} (every setting is in .env.example and the README)`
    })
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`)
  }
  return Number(raw)
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`)
  }
  return raw as T
}

/** REDIS_URL: its path, if any, a database number (ioredis would send SELECT NaN, and die of the reply). */
function redisUrl(env: Env): string | undefined {
  const raw = url(env, 'REDIS_URL', ['redis:', 'rediss:'])
  if (raw !== undefined && !/^\/?(\d{1,5})?$/.test(new URL(raw).pathname)) {
    throw new ConfigError(`REDIS_URL's path must be a database number (redis://host:6379/0), not "${new URL(raw).pathname}"`)
  }
  // ioredis also takes the database as ?db=N (the path wins over it).
  const db = raw === undefined ? null : new URL(raw).searchParams.get('db')
  if (db !== null && !/^\d{1,5}$/.test(db)) throw new ConfigError(`REDIS_URL's db parameter must be a database number, not "${db}"`)
  return raw
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(`${name} is not a URL: "${redactUrl(raw)}"`)
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must start with ${protocols.join(' or ')}`)
  }
  return raw
}

/**
 * The default database: data/petstore.db in the project (the folder of package.json),
 * wherever the command is run from. A `keys create` run in a subfolder must write
 * to the database the server reads, not a new one beside it.
 */
export const DEFAULT_DATABASE_FILE = fileURLToPath(new URL('../data/petstore.db', import.meta.url))

function databaseUrl(env: Env): string {
  const raw = env.DATABASE_URL || `sqlite:${DEFAULT_DATABASE_FILE}`
  if (raw.startsWith('sqlite:')) {
    if (raw.length === 'sqlite:'.length) throw new ConfigError('DATABASE_URL sqlite: needs a file path, e.g. sqlite:./data/petstore.db')
    // An explicit relative path is the working directory's, as on any command line; made
    // absolute here so that every log line and message names the one file it is.
    return `sqlite:${resolve(raw.slice('sqlite:'.length))}`
  }
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(raw)?.[0]
  if (scheme !== 'postgres:' && scheme !== 'postgresql:') {
    // Only the scheme is echoed: the rest may hold a password.
    throw new ConfigError(
      `DATABASE_URL must be sqlite:PATH (e.g. sqlite:./data/petstore.db) or postgres://USER@HOST:5432/DB, got ${scheme ? `a ${scheme} URL` : 'no URL scheme'}`,
    )
  }
  return url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']) ?? raw
}

function logFormat(env: Env, environment: Environment): 'json' | 'pretty' {
  const format = oneOf(env, 'LOG_FORMAT', ['json', 'pretty'] as const, 'json')
  // Log collectors parse JSON lines; pino-pretty is a development dependency, not installed with --omit=dev.
  if (format === 'pretty' && environment === 'production') throw new ConfigError('LOG_FORMAT=pretty is for development; production logs are JSON lines (LOG_FORMAT=json)')
  return format
}

/** A comma-separated setting's entries, trimmed, empty ones left out. */
const commaList = (env: Env, name: string): string[] => (env[name] ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')

/** Address ranges, each a CIDR or an address, with an optional port: `10.0.0.0/8`, `127.0.0.1:4000`, `[::1]:4000`, `[fd00::/8]:443` (webhooks/outbound.ts parses them). */
function cidrs(env: Env, name: string): string[] {
  const list = commaList(env, name)
  for (const entry of list) {
    const [, range = '', port] = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry) ?? /^([\d.]+(?:\/\d{1,2})?)(?::(\d{1,5}))?$/.exec(entry) ?? /^([\da-fA-F:.]+(?:\/\d{1,3})?)$/.exec(entry) ?? []
    const valid = range.includes('/') ? ipaddr.isValidCIDR(range) : ipaddr.isValid(range)
    if (!valid || (port !== undefined && (Number(port) < 1 || Number(port) > 65_535))) {
      throw new ConfigError(`${name} must be a comma-separated list of CIDRs or addresses, each with an optional port, such as 127.0.0.0/8, 127.0.0.1:4000 or [::1]:4000, got "${entry}"`)
    }
  }
  return list
}

function dnsServers(env: Env, name: string): string[] {
  const list = commaList(env, name)
  for (const entry of list) {
    const [, address = '', port] = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry) ?? /^([\d.]+)(?::(\d{1,5}))?$/.exec(entry) ?? /^([\da-fA-F:]+)$/.exec(entry) ?? []
    if (!ipaddr.isValid(address) || (port !== undefined && (Number(port) < 1 || Number(port) > 65_535))) {
      throw new ConfigError(`${name} must be a comma-separated list of DNS servers' addresses, each with an optional port, such as 10.0.0.2, 10.0.0.2:5353 or [fd00::53]:53, got "${entry}"`)
    }
  }
  return list
}

function baseUrl(env: Env, name: string, fallback: string): string {
  const value = url(env, name, ['http:', 'https:']) ?? fallback
  // Both base URLs include the version segment (spec, Versioning).
  if (!/\/v1\/?$/.test(value)) throw new ConfigError(`${name} must end with /v1, got "${redactUrl(value)}"`)
  return value.replace(/\/$/, '')
}

function trustProxy(env: Env): boolean | string {
  const raw = env.PETSTORE_TRUST_PROXY?.trim()
  if (raw === undefined || raw === '' || raw === 'false') return false
  if (raw === 'true') return true
  // Otherwise a comma-separated list of addresses or CIDR ranges, as Fastify takes it.
  return raw
}

/**
 * `PETSTORE_TRUST_PROXY=true` takes the first address of `X-Forwarded-For`, which the
 * client writes: anyone can then name the address its requests without a key are
 * limited under. Said at start rather than refused: behind a proxy that replaces the
 * header it is right.
 */
export function trustProxyWarning(config: Pick<Config, 'trustProxy'>): string | undefined {
  const everyone = config.trustProxy === true || (typeof config.trustProxy === 'string' && config.trustProxy.split(',').some((entry) => /\/0$/.test(entry.trim())))
  if (!everyone) return undefined
  return `PETSTORE_TRUST_PROXY=${config.trustProxy} trusts every X-Forwarded-For hop, so a client can name any address as its own and escape the limits kept by address: set it to the addresses of the proxies in front instead (PETSTORE_TRUST_PROXY=10.0.0.5,10.0.0.6 or a CIDR)`
}

// Query parameters that carry secrets in connection strings (libpq's password and
// sslpassword, tokens and keys of managed services).
/** A URL parameter whose name says it holds a secret: its value is never shown (here, in the request log, in a 401's hint). */
export const SECRET_PARAMETER = /pass|secret|token|key/i

/**
 * A URL fit for a log line or an error message: its userinfo masked (the password,
 * or the whole of it when it has no password: a token is often given as the user
 * name) and the values of secret-looking query parameters replaced by `***`. Works on
 * text that is not a valid URL too: the userinfo is whatever lies between the scheme
 * (with or without `//`) and the last `@`, which over-masks rather than leaks when a
 * password holds `/`, `?`, `#` or `@`, and covers `postgres:user:pw@host` and
 * `user:pw@host`. `sqlite:` paths are returned as they are.
 */
export function redactUrl(raw: string): string {
  if (raw.startsWith('sqlite:')) return raw
  let text = raw
  const at = text.lastIndexOf('@')
  if (at !== -1) {
    const scheme = /^[a-z][a-z0-9+.-]*:(?=[^@]*@)/i.exec(text)?.[0] ?? ''
    const start = scheme.length + /^\/*/.exec(text.slice(scheme.length))![0].length
    const userinfo = text.slice(start, at)
    const colon = userinfo.indexOf(':')
    // "user:***" keeps who connects; a user name alone may be the secret.
    text = `${text.slice(0, start)}${colon === -1 ? '***' : `${userinfo.slice(0, colon)}:***`}${text.slice(at)}`
  }
  return text.replace(/([?&])([^=&#]*)=([^&#]*)/g, (match, separator: string, name: string) =>
    SECRET_PARAMETER.test(decodeURIComponentSafely(name)) ? `${separator}${name}=***` : match,
  )
}

function decodeURIComponentSafely(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}
