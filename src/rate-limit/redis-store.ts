// Counters and bans in Redis, so any number of instances enforce one limit. One
// Lua script per request does the whole check-and-count atomically, and takes the
// time from Redis (TIME), so window edges do not depend on each instance's clock.
// Every key expires with its window.
import { Redis } from 'ioredis'
import type { Clock } from '../clock.js'
import type { HitRequest, HitResult, SharedCounterStore } from './counter-store.js'

// The keys depend on the time read inside the script, so they cannot be passed in
// KEYS; all share the identity's hash tag, so they live in one slot.
const HIT_SCRIPT = `
local now = tonumber(ARGV[5])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local per_minute, per_day = tonumber(ARGV[1]), tonumber(ARGV[2])
local ban_after, ban_ms = tonumber(ARGV[3]), tonumber(ARGV[4])
local minute = math.floor(now / 60000)
local day = math.floor(now / 86400000)
local base = KEYS[1]
local minute_key = base .. ':m:' .. minute
local day_key = base .. ':d:' .. day
local refused_key = base .. ':r:' .. minute
local ban_key = base .. ':ban'
local minute_end = (minute + 1) * 60000
local day_end = (day + 1) * 86400000

local m = tonumber(redis.call('GET', minute_key) or '0')
local d = tonumber(redis.call('GET', day_key) or '0')
local banned_until = tonumber(redis.call('GET', ban_key) or '0')
if banned_until > now then
  return {'banned', now, m, d, banned_until}
end
if m < per_minute and d < per_day then
  m = redis.call('INCR', minute_key)
  redis.call('PEXPIRE', minute_key, minute_end - now + 1000)
  d = redis.call('INCR', day_key)
  redis.call('PEXPIRE', day_key, day_end - now + 1000)
  return {'served', now, m, d, 0}
end
local r = redis.call('INCR', refused_key)
redis.call('PEXPIRE', refused_key, minute_end - now + 1000)
if r > ban_after then
  banned_until = now + ban_ms
  redis.call('SET', ban_key, banned_until, 'PX', ban_ms)
  redis.call('DEL', refused_key)
  return {'banned', now, m, d, banned_until}
end
return {'limited', now, m, d, 0}
`

type ScriptReply = [HitResult['outcome'], number, number, number, number]
type WithHit = Redis & { petstoreHit(key: string, ...args: (number | string)[]): Promise<ScriptReply> }

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
    // Keep reconnecting in the background, at most every 2 s.
    retryStrategy: (times) => Math.min(times * 100, 2_000),
    lazyConnect: false,
    // Every request runs the script once: the scripts of one event-loop turn go out
    // in one write (a pipeline) instead of one write each. Order and atomicity per
    // script are unchanged.
    enableAutoPipelining: true,
  }) as WithHit
  // Connection errors surface as failed commands; the 'error' event alone must not crash the process.
  redis.on('error', () => {})
  redis.defineCommand('petstoreHit', { numberOfKeys: 1, lua: HIT_SCRIPT })

  return {
    redis,
    async hit({ identity, limits, banAfter, banMs }: HitRequest): Promise<HitResult> {
      const [outcome, now, minuteCount, dayCount, bannedUntil] = await redis.petstoreHit(
        `${prefix}:rl:{${identity}}`,
        limits.perMinute,
        limits.perDay,
        banAfter,
        banMs,
        clock ? clock.now() : '',
      )
      return { outcome, now, minuteCount, dayCount, bannedUntil }
    },
    async ping() {
      await redis.ping()
    },
    onConnectionChange(listener) {
      redis.on('ready', () => listener(true))
      // 'close' comes with every lost connection and every failed attempt to reconnect.
      redis.on('close', () => listener(false))
    },
    /** Resolves once connected, or after the connect timeout: a server starting with Redis down still starts. */
    ready: () =>
      new Promise<void>((resolve) => {
        if (redis.status === 'ready') return resolve()
        const done = () => {
          clearTimeout(timer)
          redis.off('ready', done)
          resolve()
        }
        const timer = setTimeout(done, connectTimeoutMs)
        redis.once('ready', done)
      }),
    async close() {
      redis.disconnect()
    },
  }
}
