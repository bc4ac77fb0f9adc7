// GET /healthz: the process is up. GET /readyz: every dependency answers; 503
// naming what does not, so a load balancer stops sending traffic here.
import fp from 'fastify-plugin'
import type { Store } from '../db/store.js'
import { ApiError } from '../errors.js'
import type { RateLimiter } from '../rate-limit/limiter.js'
import { sendError } from './error-handler.js'

type Check = () => Promise<void>
const CHECK_TIMEOUT_MS = 2_000

async function run(check: Check): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS)
      }),
    ])
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  } finally {
    clearTimeout(timer)
  }
}

export default fp(
  async (app, { store, limiter }: { store: Store; limiter: RateLimiter }) => {
    const checks: Record<string, Check> = { store: () => store.ping() }
    if (limiter.ping) {
      const ping = limiter.ping
      checks.redis = async () => {
        await ping()
        if (limiter.degraded) throw new Error('the limiter is on per-instance counters (fallback)')
      }
    }

    app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }))

    app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
      const names = Object.keys(checks)
      const failures = await Promise.all(names.map((name) => run(checks[name]!)))
      const down = names.flatMap((name, i) => (failures[i] ? [{ field: name, message: failures[i]! }] : []))
      if (down.length === 0) return { status: 'ready', checks: Object.fromEntries(names.map((n) => [n, 'ok'])) }
      return sendError(
        reply,
        new ApiError('service_unavailable', `Not ready: ${down.map((d) => `${d.field} (${d.message})`).join(', ')}.`, { details: down }),
      )
    })
  },
  { name: 'health' },
)
