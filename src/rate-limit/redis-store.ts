// Counters and bans in Redis, so any number of instances enforce one limit. One Lua
// script call per identity per event-loop turn does the whole check-and-count
// atomically for every request of that identity that arrived in the turn, and takes
// the time from Redis (TIME), so window edges do not depend on each instance's
// clock. Every key expires with its window.
//
// Why a batch gives each request what a script run of its own would have: the
// requests of one turn are concurrent, so nothing orders them but arrival, and
// their runs (one pipeline) could already have run back to back in the same
// millisecond. The batched script is exactly that: the n runs in arrival order at
// one instant, the first served while both windows have room, then the refusals
// counted one by one until the one past ban_after starts the ban, and every later
// one banned, as its run would have found that ban. Only another instance's calls
// can no longer fall between them, an order they could already have had.
import type { Socket } from 'node:net'
import { Redis } from 'ioredis'
import type { Limits } from '../vocabulary/plans.js'
import type { Clock } from '../clock.js'
import type { HitRequest, HitResult, SharedCounterStore } from './counter-store.js'

// The keys depend on the time read inside the script, so they cannot be passed in
// KEYS; all share the identity's hash tag, so they live in one slot.
//
// ARGV: per_minute, per_day, ban_after, ban_ms, now (tests; '' reads TIME), n (the
// hits to apply). Returns {now, m, d, served, limited, banned_until}: m and d are the
// counts before the batch; of its n hits the first `served` are served, the next
// `limited` limited, and the rest banned until banned_until.
/** Lua: `now` in ms, from the argument `arg` (tests' clocks) or, when it is '', Redis's own TIME. */
const NOW = (arg: string) => `
local now = tonumber(${arg})
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end`

const HIT_SCRIPT = `${NOW('ARGV[5]')}
local per_minute, per_day = tonumber(ARGV[1]), tonumber(ARGV[2])
local ban_after, ban_ms = tonumber(ARGV[3]), tonumber(ARGV[4])
local n = tonumber(ARGV[6])
local minute = math.floor(now / 60000)
local day = math.floor(now / 86400000)
local base, ban_base = KEYS[1], KEYS[2]
local minute_key = base .. ':m:' .. minute
local day_key = base .. ':d:' .. day
local refused_key = ban_base .. ':r:' .. minute
local ban_key = ban_base .. ':ban'
local minute_end = (minute + 1) * 60000
local day_end = (day + 1) * 86400000

local m = tonumber(redis.call('GET', minute_key) or '0')
local d = tonumber(redis.call('GET', day_key) or '0')
local banned_until = tonumber(redis.call('GET', ban_key) or '0')
if banned_until > now then
  return {now, m, d, 0, 0, banned_until}
end
-- Each run serves while both windows have room, so the first s of n are served.
local served = math.max(0, math.min(n, per_minute - m, per_day - d))
if served > 0 then
  redis.call('INCRBY', minute_key, served)
  redis.call('PEXPIRE', minute_key, minute_end - now + 1000)
  redis.call('INCRBY', day_key, served)
  redis.call('PEXPIRE', day_key, day_end - now + 1000)
end
local refused = n - served
if refused == 0 then
  return {now, m, d, served, 0, 0}
end
-- Refusals count one by one; the one that takes the count past ban_after starts
-- the ban and clears the count, and the runs after it find the ban.
local r = tonumber(redis.call('GET', refused_key) or '0')
local limited = math.max(0, math.min(refused, ban_after - r))
if limited == refused then
  redis.call('INCRBY', refused_key, limited)
  redis.call('PEXPIRE', refused_key, minute_end - now + 1000)
  return {now, m, d, served, limited, 0}
end
banned_until = now + ban_ms
redis.call('SET', ban_key, banned_until, 'PX', ban_ms)
redis.call('DEL', refused_key)
return {now, m, d, served, limited, banned_until}
`

// KEYS[1]: the identity's base key, KEYS[2]: its ban identity's. ARGV: now ('' reads TIME). Returns {now, m, d, banned_until}.
const PEEK_SCRIPT = `${NOW('ARGV[1]')}
local base = KEYS[1]
local m = tonumber(redis.call('GET', base .. ':m:' .. math.floor(now / 60000)) or '0')
local d = tonumber(redis.call('GET', base .. ':d:' .. math.floor(now / 86400000)) or '0')
local banned_until = tonumber(redis.call('GET', KEYS[2] .. ':ban') or '0')
if banned_until <= now then banned_until = 0 end
return {now, m, d, banned_until}
`

/** The script's reply: see HIT_SCRIPT. */
type BatchReply = [now: number, minuteCount: number, dayCount: number, served: number, limited: number, bannedUntil: number]
type WithHit = Redis & {
  petstoreHit(key: string, banKey: string, ...args: (number | string)[]): Promise<BatchReply>
  petstorePeek(key: string, banKey: string, now: number | string): Promise<[number, number, number, number]>
}

/** What the `i`th hit of a batch (0-based, in arrival order) would have got from a script run of its own. */
function nthResult([now, minuteCount, dayCount, served, limited, bannedUntil]: BatchReply, i: number): HitResult {
  if (i < served) return { outcome: 'served', now, minuteCount: minuteCount + i + 1, dayCount: dayCount + i + 1, bannedUntil: 0 }
  const outcome = i < served + limited ? 'limited' : 'banned'
  return { outcome, now, minuteCount: minuteCount + served, dayCount: dayCount + served, bannedUntil: outcome === 'banned' ? bannedUntil : 0 }
}

/** The hits of one identity gathered in this turn, all with the same arguments. */
interface Batch {
  sameArgs: string
  n: number
  reply: Promise<BatchReply>
}

interface ScriptArguments {
  /** per_minute, per_day, ban_after, ban_ms, now: see HIT_SCRIPT. */
  args: [number, number, number, number, number | '']
  /** The arguments as one string: hits with equal ones can share a batch. */
  sameArgs: string
}

export interface RedisStoreOptions {
  url: string
  /** Prefix of every key, so tests and deployments can share a server. */
  prefix?: string
  /** Bounds how long a request can wait on Redis. */
  commandTimeoutMs?: number
  connectTimeoutMs?: number
  /** Tests only: windows follow this clock instead of Redis's TIME. */
  clock?: Clock
}

export function createRedisCounterStore({
  url,
  prefix = 'petstore',
  commandTimeoutMs = 250,
  connectTimeoutMs = 1_000,
  clock,
}: RedisStoreOptions): SharedCounterStore & { redis: Redis } {
  const redis = new Redis(url, {
    connectTimeout: connectTimeoutMs,
    commandTimeout: commandTimeoutMs,
    // Fail at once while disconnected instead of queueing: the caller falls back.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // Keep reconnecting in the background, at most every second: back within 2 s of a heal.
    retryStrategy: (times) => Math.min(times * 100, 1_000),
    lazyConnect: false,
    // One script call per identity per turn, and the calls of one turn (one per
    // identity) go out in one write (a pipeline) instead of one write each. Order
    // and atomicity per script are unchanged.
    enableAutoPipelining: true,
  }) as WithHit
  // Connection errors surface as failed commands; the 'error' event alone must not crash the process.
  redis.on('error', () => {})
  // A command that timed out may still be in the connection, held by a partition: if
  // the connection lived on, it would reach Redis when the partition heals and charge
  // a request that was answered without it (a 503, or a count on this instance alone).
  // So the connection goes, with an RST, which drops what the kernel still holds to
  // send (a polite close would deliver it); ioredis connects anew.
  const resetOnTimeout = (error: unknown): never => {
    if (error instanceof Error && error.message === 'Command timed out') (redis as Redis & { stream?: Socket }).stream?.resetAndDestroy()
    throw error
  }
  redis.defineCommand('petstoreHit', { numberOfKeys: 2, lua: HIT_SCRIPT })
  redis.defineCommand('petstorePeek', { numberOfKeys: 2, lua: PEEK_SCRIPT })
  const baseKey = (identity: string) => `${prefix}:rl:{${identity}}`
  // A ban's keys share the counted identity's hash tag: one slot for the script.
  const banKey = (identity: string, banIdentity: string) => `${baseKey(identity)}:b:${banIdentity}`

  // A hit's script arguments (but n). Without a test clock they depend on the limits
  // alone, so they are built once per limits object (the plans' constants, or a cached
  // key's record). With one, the clock is read now, as each request's own run would
  // have: a test that moves it between two hits of one turn gets two batches.
  const built = new WeakMap<Limits, ScriptArguments>()
  function argumentsOf(limits: Limits, banAfter: number, banMs: number): ScriptArguments {
    const known = clock ? undefined : built.get(limits)
    if (known && known.args[2] === banAfter && known.args[3] === banMs) return known
    const args: ScriptArguments['args'] = [limits.perMinute, limits.perDay, banAfter, banMs, clock ? clock.now() : '']
    const made = { args, sameArgs: args.join(' ') }
    if (!clock) built.set(limits, made)
    return made
  }

  // Open batches by key: the hits of this turn join them; each is sent after the
  // turn, and from then on the key's hits gather into a new one (as read-coalescer.ts).
  const gathering = new Map<string, Batch>()
  function gather(key: string, ban: string, args: (number | string)[], sameArgs: string): Batch {
    const batch: Batch = {
      sameArgs,
      n: 0,
      // If the call fails (Redis down, timeout), every hit of the batch rejects with
      // it, as each run of its own would have, and the failover store falls back.
      reply: new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        if (gathering.get(ban) === batch) gathering.delete(ban)
        return redis.petstoreHit(key, ban, ...args, batch.n).catch(resetOnTimeout)
      }),
    }
    gathering.set(ban, batch)
    return batch
  }

  return {
    redis,
    async peek(identity, banIdentity) {
      const [now, minuteCount, dayCount, bannedUntil] = await redis.petstorePeek(baseKey(identity), banKey(identity, banIdentity), clock ? clock.now() : '').catch(resetOnTimeout)
      return { now, minuteCount, dayCount, bannedUntil }
    },
    async unban(identity, banIdentity) {
      // A ban cleared the refusal count when it started, so the ban key is all there is.
      return (await redis.del(`${banKey(identity, banIdentity)}:ban`).catch(resetOnTimeout)) > 0
    },
    hit({ identity, banIdentity, limits, banAfter, banMs }: HitRequest): Promise<HitResult> {
      const key = baseKey(identity)
      const ban = banKey(identity, banIdentity)
      const { args, sameArgs } = argumentsOf(limits, banAfter, banMs)
      // The ban key names the counted identity too: one batch per key (or address) and account.
      let batch = gathering.get(ban)
      // Other arguments (a changed plan, a moved test clock) start a batch of their
      // own after this one, so the runs stay in arrival order.
      if (!batch || batch.sameArgs !== sameArgs) batch = gather(key, ban, args, sameArgs)
      const i = batch.n++
      return batch.reply.then((reply) => nthResult(reply, i))
    },
    async ping() {
      await redis.ping().catch(resetOnTimeout)
    },
    onConnectionChange(listener) {
      redis.on('ready', () => listener(true))
      // 'close' comes with every lost connection and every failed attempt to reconnect.
      redis.on('close', () => listener(false))
    },
    /**
     * Resolves once connected, or after the connect timeout: a server starting with Redis
     * down still starts. Rejects when the URL's database is not one this Redis has: ioredis
     * would carry on in database 0, sharing it with whatever else uses it.
     */
    ready: async () => {
      const connected =
        redis.status === 'ready' ||
        (await new Promise<boolean>((resolve) => {
          const onReady = () => {
            clearTimeout(timer)
            resolve(true)
          }
          const timer = setTimeout(() => {
            redis.off('ready', onReady)
            resolve(false)
          }, connectTimeoutMs)
          redis.once('ready', onReady)
        }))
      // The database ioredis selects: the URL's path, else its ?db=, else 0.
      const db = Number(redis.options.db ?? 0)
      if (!connected || db === 0) return
      await redis.select(db).catch((error: unknown) => {
        throw new Error(`REDIS_URL names database ${db}, which this Redis refuses (${error instanceof Error ? error.message : String(error)}): see its "databases" setting`)
      })
    },
    async close() {
      redis.disconnect()
    },
  }
}
