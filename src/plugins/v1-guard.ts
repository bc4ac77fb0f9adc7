// The /v1 guard, in the order that matters: identify the caller, count the request,
// then refuse callers without a valid key, so that even a 401 is counted and
// carries the rate-limit headers. Callers without a valid key are limited per
// client address with the free plan's numbers, a guard against key guessing.
//
// This is the one place that knows the steps may finish at once: with the key
// cached and the counters in memory, nothing waits and no promise is made.
//
// Every refusal is decided before the store is asked, when it can be: a key cached
// as known or unknown needs no lookup, a key not cached sent from a banned address is
// refused without one, and so is a banned key whose cached record is past its lifetime
// (a banned caller's flood costs no query, not even a refresh). Only a key never seen,
// from an address not banned, or a key not banned whose record is past its lifetime, is
// looked up.
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import type { AuthResult, Authenticator } from '../api-keys/authenticator.js'
import { PLAN_LIMITS, type Limits } from '../vocabulary/plans.js'
import type { ApiKeyRecord } from '../api-keys/api-key-record.js'
import type { Scope } from '../vocabulary/scopes.js'
import { SECRET_PARAMETER } from '../config.js'
import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import type { Caller, RateLimitCount, RateLimitResult, RateLimiter } from '../rate-limit/limiter.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A /v1 route that answers without a key (the OpenAPI document). */
    public?: boolean
    /** The scope a key needs for this route (routes/v1/scopes.ts sets it from the operation). */
    scope?: Scope
    /** A route that does not count against the caller's limits (GET /v1/usage): it is answered from them. */
    uncounted?: boolean
    /** A write that makes events: paced while the webhooks fall behind (routes/v1/scopes.ts sets it; webhooks/write-pacing.ts). */
    paced?: boolean
    /** A POST whose JSON body may be left out, or sent empty: either is `{}` (routes/v1/parameters.ts `optionalBody`). */
    optionalBody?: boolean
  }
  interface FastifyRequest {
    /** The caller's key, once the guard has accepted it. */
    apiKey: ApiKeyRecord | null
    /** Set when the rate limiter refused the request: why (the usage history tells the two apart). */
    rateLimitOutcome: 'limited' | 'banned' | undefined
  }
}

/**
 * Node keeps the first of two Authorization headers and drops the other; a proxy in
 * front may read the other one. A request that sends two is refused like a key not
 * recognised (401, counted by address), never served as either key.
 */
const SENT_TWICE: AuthResult = Object.freeze({ ok: false, missing: false, message: 'The Authorization header was sent more than once: send it once.', description: 'Authorization sent twice' })

function authorizationSentTwice(raw: readonly string[]): boolean {
  let seen = false
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    // (The length first: most headers are not 13 characters long, and cost no lowercasing.)
    if (name.length === 13 && name.toLowerCase() === 'authorization') {
      if (seen) return true
      seen = true
    }
  }
  return false
}

export interface V1GuardOptions {
  authenticator: Authenticator
  limiter: RateLimiter
  clock: Clock
}

/**
 * Keys not cached that a banned address still has looked up, a minute. An address is
 * banned for what its requests without a valid key did, and a web page can make its
 * visitors' browsers send those (an `<img>` needs no key and no CORS): refusing every
 * key from a banned address unlooked-up refused the visitor's own valid key, after each
 * restart, for 15 minutes. A page cannot send a key from the browser (that would need
 * CORS), so the visitor's key gets one of these; a guesser behind the ban gets a few.
 */
export const LOOKUPS_WHILE_BANNED = 10
/** Banned addresses whose lookups are counted in a minute; beyond, another gets none until the next. */
const MAX_COUNTED_ADDRESSES = 10_000

function createLookupBudget(clock: Clock) {
  let minute = 0
  let spent = new Map<string, number>()
  return (address: string): boolean => {
    const now = Math.floor(clock.now() / 60_000)
    if (now !== minute) [minute, spent] = [now, new Map()]
    // Full, it refuses rather than starts the count again, which gave every address its lookups back.
    if (!spent.has(address) && spent.size >= MAX_COUNTED_ADDRESSES) return false
    const n = (spent.get(address) ?? 0) + 1
    spent.set(address, n)
    return n <= LOOKUPS_WHILE_BANNED
  }
}

export default fp(
  async (app, { authenticator, limiter, clock }: V1GuardOptions) => {
    app.decorateRequest('apiKey', null)
    app.decorateRequest('rateLimitOutcome', undefined)
    const lookupBudget = createLookupBudget(clock)
    /** Requests let past their address's ban to have their key looked up: asked once each, whichever ban check asks. */
    const lookingUp = new WeakSet<FastifyRequest>()
    /** Whether a ban of `target` refuses the request unlooked-up: a key's, always; an address's, once its lookups this minute are spent. */
    const refusesUnlooked = (request: FastifyRequest, target: BanTarget) => {
      if (target.auth !== NOT_LOOKED_UP) return true
      if (lookingUp.has(request)) return false
      if (!lookupBudget(request.ip)) return true
      lookingUp.add(request)
      return false
    }

    app.addHook('onRequest', (request, reply, done) => {
      // An account's data is for the caller alone: no browser cache keeps it past a sign-out
      // (a browser's cache is keyed by URL, not by Authorization), nor any other cache. A
      // route whose answer may be kept (openapi.json) sets its own. And no browser reads a
      // JSON answer as anything else.
      reply.header('cache-control', 'no-store')
      reply.header('x-content-type-options', 'nosniff')
      const known = authorizationSentTwice(request.raw.rawHeaders) ? SENT_TWICE : authenticator.peek(request.headers.authorization)
      // A ban this instance knows of refuses before anything is looked up.
      const target = banTargetOf(request, known)
      const ban = target && limiter.bannedNow(target.caller, target.limits)
      if (ban && refusesUnlooked(request, target)) {
        try {
          admit(request, reply, target.auth, ban)
        } catch (error) {
          return done(error as Error)
        }
      }
      if (request.routeOptions.config.uncounted) {
        uncounted(request, reply, known).then(() => done(), done)
        return
      }
      // Nothing to wait for: the key was known without the store, the counters are here.
      if (settled(known) && limiter.checkNow) {
        try {
          admit(request, reply, known, limiter.checkNow(identityOf(request, known), limitsOf(known)))
        } catch (error) {
          return done(error as Error)
        }
        keepFresh(request, known)
        return done()
      }
      guard(request, reply, known).then(() => done(), done)
    })

    /** A record due for a refresh is refreshed by a request it let through: never by a refused one. */
    function keepFresh(request: FastifyRequest, auth: AuthResult) {
      if (auth.ok && auth.due) authenticator.refresh(request.headers.authorization!)
    }

    /**
     * With Redis, a ban is known here for a second only: past it, Redis is asked (a round
     * trip, no query) before the store is asked for a key not cached, or for a key whose
     * cached record is past its lifetime.
     */
    async function refuseBanned(request: FastifyRequest, reply: FastifyReply, known: AuthResult | undefined) {
      const target = banTargetOf(request, known)
      if (!limiter.shared || !target) return
      const windows = await limiter.peek(target.caller, target.limits)
      if (windows.outcome === 'banned' && refusesUnlooked(request, target)) admit(request, reply, target.auth, windows)
    }

    /** The caller's key: as cached, or looked up once no ban known for it refused it first. */
    async function identify(request: FastifyRequest, reply: FastifyReply, known: AuthResult | undefined): Promise<AuthResult> {
      await refuseBanned(request, reply, known)
      return settled(known) ? known : authenticator.authenticate(request.headers.authorization)
    }

    async function guard(request: FastifyRequest, reply: FastifyReply, known: AuthResult | undefined) {
      const auth = await identify(request, reply, known)
      admit(request, reply, auth, await limiter.check(identityOf(request, auth), limitsOf(auth)))
      keepFresh(request, auth)
    }

    // A valid key is let through without being counted, unless it is banned: usage is
    // for keys that may still call, and a banned key's flood must cost nothing. Anything
    // else is counted and refused as on any route, so that the route cannot be used to
    // guess keys for free.
    async function uncounted(request: FastifyRequest, reply: FastifyReply, known: AuthResult | undefined) {
      const auth = await identify(request, reply, known)
      if (auth.ok) {
        // A ban known here needs no round trip to the shared counters; in-memory counters
        // answer the ban in the peek itself.
        const windows = (limiter.shared && limiter.bannedNow(auth.key, auth.key.limits)) || (await limiter.peek(auth.key, auth.key.limits))
        if (windows.outcome === 'banned') return admit(request, reply, auth, windows)
        request.apiKey = auth.key
        keepFresh(request, auth)
        // The rate-limit headers every /v1 answer carries, from the windows as they stand.
        const headers = rateLimitHeaders(windows)
        delete headers['retry-after'] // answered anyway, though limited
        reply.headers(headers)
        return
      }
      admit(request, reply, auth, await limiter.check(identityOf(request, auth), limitsOf(auth)))
    }
  },
  { name: 'v1-guard' },
)

// A key is counted as its account, and banned as itself (api-key-record.ts); a caller
// without a valid key is counted and banned as its address.
const identityOf = (request: FastifyRequest, auth: AuthResult): Caller => (auth.ok ? auth.key : addressOf(request))
const addressOf = (request: FastifyRequest): Caller => {
  const ip = `ip:${request.ip}`
  return { counterIdentity: ip, banIdentity: ip }
}
/** A key refused without a lookup because its address is banned: the ban is the answer. */
const NOT_LOOKED_UP: AuthResult = Object.freeze({ ok: false, missing: false, message: 'The address is banned; the key was not looked up.' })

/** Whether the peek's answer stands without the store: a key cached (as valid, refused or unknown) within its record's lifetime, or a header refused as it is. */
const settled = (known: AuthResult | undefined): known is AuthResult => known !== undefined && !(known.ok && known.stale)

/**
 * Who a ban is looked for before the store is asked, when the store would be: the
 * address, for a key not cached (a guesser's made-up keys); the key itself, for one
 * whose cached record is past its lifetime (a banned key's record is not refreshed
 * while its ban holds). None when the peek's answer stands.
 */
interface BanTarget {
  caller: Caller
  limits: Limits
  auth: AuthResult
}
function banTargetOf(request: FastifyRequest, known: AuthResult | undefined): BanTarget | undefined {
  if (known === undefined) return { caller: addressOf(request), limits: PLAN_LIMITS.free, auth: NOT_LOOKED_UP }
  if (known.ok && known.stale) return { caller: known.key, limits: known.key.limits, auth: known }
  return undefined
}
const limitsOf = (auth: AuthResult) => (auth.ok ? auth.key.limits : PLAN_LIMITS.free)

const ANONYMOUS = 'callers without a valid API key'

/**
 * An onRequest hook for the keyless routes outside /v1 (the docs page and its
 * document): counted by address with the free plan's limits and refused as any
 * request without a key is, so that they cannot be fetched without bound.
 */
export function anonymousLimit(limiter: RateLimiter): onRequestHookHandler {
  return (request, reply, done) => {
    if (limiter.checkNow) {
      try {
        applyCount(request, reply, limiter.checkNow(addressOf(request), PLAN_LIMITS.free), ANONYMOUS)
      } catch (error) {
        return done(error as Error)
      }
      return done()
    }
    limiter.check(addressOf(request), PLAN_LIMITS.free).then((counted) => applyCount(request, reply, counted, ANONYMOUS)).then(() => done(), done)
  }
}

/** Sets the rate-limit headers of a counted request, or throws the answer: 503 when the limiter is unavailable, else 429. */
function applyCount(request: FastifyRequest, reply: FastifyReply, counted: RateLimitResult, who: string) {
  if (counted.outcome === 'unavailable') {
    throw new ApiError('service_unavailable', 'The rate limiter is unavailable; retry shortly.', {
      headers: { 'retry-after': '1' },
      dependency: 'redis',
    })
  }
  reply.headers(rateLimitHeaders(counted))
  if (counted.outcome !== 'served') request.rateLimitOutcome = counted.outcome
  if (counted.outcome !== 'served') throw refusal(counted, who)
}

/** A key sent where some tools put it, in the URL (api_key=, access_token=…, or in the path): read by no one. */
const keyInUrl = (request: FastifyRequest) => request.url.includes('ps_') || Object.keys(request.query as object).some((name) => SECRET_PARAMETER.test(name))
const KEY_IN_URL = 'Missing API key: a key in the URL is not read (and would end up in logs and histories); send it as "Authorization: Bearer <key>".'

/** Lets the request through, or throws the answer: 503, 429 or 401, in that order. */
function admit(request: FastifyRequest, reply: FastifyReply, auth: AuthResult, counted: RateLimitResult) {
  if (auth.ok) request.apiKey = auth.key
  applyCount(request, reply, counted, auth.ok ? `the ${auth.key.plan} plan` : ANONYMOUS)
  if (!auth.ok && !request.routeOptions.config.public) {
    // RFC 6750 §3: a challenge on every 401; error="invalid_token" when one was sent.
    const challenge = auth.missing
      ? 'Bearer realm="petstore"'
      : `Bearer realm="petstore", error="invalid_token"${auth.description ? `, error_description="${auth.description}"` : ''}`
    throw new ApiError('unauthorized', auth.missing && keyInUrl(request) ? KEY_IN_URL : auth.message, { headers: { 'www-authenticate': challenge } })
  }
  const scope = request.routeOptions.config.scope
  // RFC 6750 §3.1: counted like any request, refused with the scope it lacks.
  if (auth.ok && scope !== undefined && !auth.key.scopes.includes(scope)) throw insufficientScope(auth.key, scope)
}

/** The 403 of a key that lacks `scope` (or several) for what it asked (an operation's scope, or those a route asks of what it reads). */
export function insufficientScope(key: ApiKeyRecord, scope: Scope | readonly Scope[], what = 'this operation needs'): ApiError {
  const needed = typeof scope === 'string' ? [scope] : scope
  const scopes = key.scopes.join(', ') || 'none'
  const [it, them] = needed.length === 1 ? ['it', 'scope'] : ['them', 'scopes']
  // A key of the same account: one of a new account would see none of this one's data.
  const remedy = `A key with keys:write can add ${it} (PATCH /v1/keys/{id}, "scopes"); on the server, npx petstore keys create --account ${key.accountId} --scopes ${needed.join(',')} makes a key of this account that has ${it}.`
  return new ApiError('insufficient_scope', `This API key lacks the ${needed.join(', ')} ${them} ${what}; its scopes are ${scopes}. ${remedy}`, {
    // RFC 6750 §3: scope is a space-delimited list.
    headers: { 'www-authenticate': `Bearer realm="petstore", error="insufficient_scope", scope="${needed.join(' ')}"` },
  })
}

const seconds = (ms: number) => Math.ceil(ms / 1000)
const retryAfter = (counted: RateLimitCount) => Math.max(1, seconds((counted.retryAt ?? counted.now) - counted.now))

// The RateLimit-Policy value depends on the limits alone: built once per limits
// object (the plans' constants, or a key's record while the authenticator caches it).
const policies = new WeakMap<Limits, string>()
function policyOf(limits: Limits): string {
  let policy = policies.get(limits)
  if (policy === undefined) {
    // draft-ietf-httpapi-ratelimit-headers: the policies.
    policy = `"minute";q=${limits.perMinute};w=60, "day";q=${limits.perDay};w=86400`
    policies.set(limits, policy)
  }
  return policy
}

/** Seconds until a banned key may use `window` again: the ban's end, or the window's reset when it is exhausted and resets later. */
function bannedFor(window: { remaining: number; resetsAt: number }, counted: RateLimitCount): number {
  const until = Math.max(counted.bannedUntil!, window.remaining === 0 ? window.resetsAt : 0)
  return seconds(until - counted.now)
}

/** Decision D7: the headers every counted /v1 response carries, whatever its status. */
export function rateLimitHeaders(counted: RateLimitCount): Record<string, string> {
  const { minute, day, reported, now } = counted
  const served = counted.outcome === 'served'
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(reported.limit),
    'x-ratelimit-remaining': served ? String(reported.remaining) : '0',
    'x-ratelimit-reset': String(seconds(counted.bannedUntil ?? reported.resetsAt)),
    'ratelimit-policy': policyOf(counted.limits),
    // draft-ietf-httpapi-ratelimit-headers: the state of each policy. During a ban
    // nothing is left in either window until the ban ends (or, later, the exhausted
    // window resets): the fields say so, rather than a reset the ban outlasts.
    ratelimit: counted.bannedUntil === undefined
      ? `"minute";r=${minute.remaining};t=${seconds(minute.resetsAt - now)}, "day";r=${day.remaining};t=${seconds(day.resetsAt - now)}`
      : `"minute";r=0;t=${bannedFor(minute, counted)}, "day";r=0;t=${bannedFor(day, counted)}`,
  }
  if (!served) headers['retry-after'] = String(retryAfter(counted))
  return headers
}

function refusal(counted: RateLimitCount, who: string): ApiError {
  const wait = `Retry after ${retryAfter(counted)} seconds`
  if (counted.outcome === 'banned') {
    const until = new Date(counted.bannedUntil ?? 0).toISOString()
    // The code is the same for both (the contract's); the message says whose ban it is.
    const whose = who === ANONYMOUS ? 'This address is temporarily banned, for requests without a valid API key,' : 'Temporarily banned'
    return new ApiError('key_banned', `${whose} until ${until} for repeated requests while rate limited. ${wait}, then back off exponentially on 429.`)
  }
  const limit = counted.reported.limit
  return counted.reported.name === 'day'
    ? new ApiError('rate_limited', `Daily quota of ${limit} requests for ${who} is used up; it resets at 00:00 UTC. ${wait}.`)
    : new ApiError('rate_limited', `Rate limit of ${limit} requests per minute for ${who} exceeded. ${wait}.`)
}
