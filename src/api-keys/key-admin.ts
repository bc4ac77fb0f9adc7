// Managing keys: create, list, read, change, roll, revoke and unban. The one service
// layer under both the command line (cli/keys.ts, an operator at the server's shell)
// and the admin API (routes/v1/keys.ts, a key with keys:write). A key acting through
// the API can never make or roll a key with more than it has: scopes, plan, limits.
import type { Clock } from '../clock.js'
import type { ApiKeyChanges, ApiKeysStore, StoredApiKey } from '../db/api-keys-store.js'
import type { Completion } from '../db/idempotency-store.js'
import type { RateLimiter } from '../rate-limit/limiter.js'
import { keyState, toApiKeyRecord, type ApiKeyRecord } from './api-key-record.js'
import { newKeyRow } from './issue-key.js'
import type { KeyEnvironment } from './key-format.js'
import { checkPlan, limitsFor, PLANS, type Limits, type Plan } from './plans.js'
import { formatScopes, scopesBeyond, SCOPE_PRESETS, type Scope } from './scopes.js'

export const MAX_EXPIRY_MS = 366 * 86_400_000
export const MAX_GRACE_MS = 7 * 86_400_000
export const DEFAULT_GRACE_MS = 86_400_000

export type KeyStatus = 'active' | 'disabled' | 'expired' | 'revoked' | 'banned'

/** A key as the API and `keys show --json` present it: never the secret. */
export interface KeyView {
  id: number
  name: string
  plan: Plan
  limits: Limits
  scopes: Scope[]
  /** The non-secret start of the key, to recognise it. */
  prefix: string
  status: KeyStatus
  /** While banned: when the ban ends. */
  bannedUntil: string | null
  createdAt: string
  lastUsedAt: string | null
  expiresAt: string | null
  revokedAt: string | null
  /** The key a roll made from this one. */
  replacedBy: number | null
}

/** A request the service refuses: `field` names what was wrong; `beyond` marks a key asking for more than it has. */
export class KeyAdminError extends Error {
  override name = 'KeyAdminError'
  constructor(
    message: string,
    readonly field: string,
    readonly beyond = false,
  ) {
    super(message)
  }
}

export interface NewKeyInput {
  name?: string
  plan: string
  limits?: Partial<Limits>
  scopes?: readonly Scope[]
  /** Milliseconds from now; at most a year. */
  expiresInMs?: number
}

export interface KeyUpdateInput {
  name?: string
  plan?: string
  limits?: Partial<Limits>
  scopes?: readonly Scope[]
  enabled?: boolean
}

export interface KeyAdminOptions {
  apiKeys: ApiKeysStore
  /** For bans: a key's status, and lifting them. */
  limiter: Pick<RateLimiter, 'peek' | 'unban'>
  clock: Clock
  environment: KeyEnvironment
}

export function createKeyAdmin({ apiKeys, limiter, clock, environment }: KeyAdminOptions) {
  async function view(key: ApiKeyRecord): Promise<KeyView> {
    const state = keyState(key, clock.now())
    if (state !== 'active') return viewAs(key, state, null)
    const windows = await limiter.peek(key.counterIdentity, key.limits)
    return windows.bannedUntil === undefined ? viewAs(key, 'active', null) : viewAs(key, 'banned', new Date(windows.bannedUntil).toISOString())
  }

  function viewAs(key: ApiKeyRecord, status: KeyStatus, bannedUntil: string | null): KeyView {
    return {
      id: key.id,
      name: key.name,
      plan: key.plan,
      limits: key.limits,
      scopes: key.scopes,
      prefix: key.prefix,
      status,
      bannedUntil,
      createdAt: key.createdAt,
      lastUsedAt: key.lastUsedAt,
      expiresAt: key.expiresAt,
      revokedAt: key.revokedAt,
      replacedBy: key.replacedBy,
    }
  }

  async function find(id: number): Promise<ApiKeyRecord | undefined> {
    const stored = await apiKeys.findById(id)
    return stored && toApiKeyRecord(stored)
  }

  function plan(name: string, limits: Partial<Limits> | undefined) {
    try {
      return checkPlan(name, limits ?? {})
    } catch (error) {
      // Worded for the command line (--per-minute); the API's routes say limits.perMinute.
      throw new KeyAdminError((error as Error).message, 'plan')
    }
  }

  /** Refuses scopes that `actor` (a key acting through the API) does not have itself. */
  function scopesWithin(actor: ApiKeyRecord | undefined, scopes: readonly Scope[]) {
    const extra = actor ? scopesBeyond(scopes, actor.scopes) : []
    if (extra.length > 0) throw new KeyAdminError(`A key cannot give scopes it does not have: ${extra.join(', ')}.`, 'scopes', true)
  }

  /** Refuses a plan above `actor`'s, or limits above its own. */
  function planWithin(actor: ApiKeyRecord | undefined, planName: Plan, custom: Limits | null) {
    if (!actor) return
    if (PLANS.indexOf(planName) > PLANS.indexOf(actor.plan)) throw new KeyAdminError(`A key on the ${actor.plan} plan cannot give the ${planName} plan.`, 'plan', true)
    const limits = limitsFor(planName, custom ?? {})
    if (limits.perMinute > actor.limits.perMinute || limits.perDay > actor.limits.perDay) {
      throw new KeyAdminError(`A key cannot give limits above its own (${actor.limits.perMinute}/min, ${actor.limits.perDay}/day).`, 'limits', true)
    }
  }

  return {
    view,

    /**
     * With `completion` (an Idempotency-Key), the 201 body is stored in the insert's
     * transaction without the secret, which is never stored: a replay answers the key
     * without it.
     */
    async create(input: NewKeyInput, actor?: ApiKeyRecord, completion?: Completion): Promise<{ secret: string; key: KeyView }> {
      const { plan: planName, custom } = plan(input.plan, input.limits)
      const scopes = input.scopes ?? SCOPE_PRESETS.all
      if (input.expiresInMs !== undefined && (input.expiresInMs <= 0 || input.expiresInMs > MAX_EXPIRY_MS)) {
        throw new KeyAdminError('A key expires at most a year (366 days) from now, and later than now.', 'expiresIn')
      }
      scopesWithin(actor, scopes)
      planWithin(actor, planName, custom)
      const now = clock.now()
      const { secret, row } = newKeyRow({
        name: input.name ?? `${planName} key`,
        plan: planName,
        custom,
        environment,
        scopes,
        expiresAt: input.expiresInMs === undefined ? null : now + input.expiresInMs,
      })
      const fresh = (stored: StoredApiKey) => viewAs(toApiKeyRecord(stored), 'active', null)
      const stored = await apiKeys.insert(row, now, completion && { completion, body: (inserted) => ({ apiKey: fresh(inserted) }) })
      return { secret, key: fresh(stored) }
    },

    async page(afterId: number, limit: number): Promise<KeyView[]> {
      return Promise.all((await apiKeys.page(afterId, limit)).map((stored) => view(toApiKeyRecord(stored))))
    },

    async get(id: number): Promise<KeyView | undefined> {
      const key = await find(id)
      return key && view(key)
    },

    async update(id: number, input: KeyUpdateInput, actor?: ApiKeyRecord): Promise<KeyView | undefined> {
      const current = await find(id)
      if (!current) return undefined
      const changes: ApiKeyChanges = {}
      if (input.name !== undefined) changes.name = input.name
      if (input.plan !== undefined || input.limits !== undefined) {
        const planName = input.plan ?? current.plan
        // An enterprise key keeps the limit it is not given; another plan takes none.
        const limits = planName === 'enterprise' && current.plan === 'enterprise' ? { ...current.limits, ...input.limits } : input.limits
        const checked = plan(planName, limits)
        planWithin(actor, checked.plan, checked.custom)
        changes.plan = checked.plan
        changes.custom = checked.custom
      }
      if (input.scopes !== undefined) {
        scopesWithin(actor, input.scopes)
        changes.scopes = formatScopes(input.scopes)
      }
      if (input.enabled !== undefined) changes.disabledAt = input.enabled ? null : (current.disabledAt === null ? clock.now() : Date.parse(current.disabledAt))
      const stored = await apiKeys.update(id, changes)
      return stored && view(toApiKeyRecord(stored))
    },

    /** A new key with the same name, plan, limits and scopes; the old one works until `graceMs` from now. */
    async roll(id: number, graceMs: number, actor?: ApiKeyRecord): Promise<{ secret: string; key: KeyView; old: KeyView } | undefined> {
      if (graceMs < 0 || graceMs > MAX_GRACE_MS) throw new KeyAdminError('The grace period is from 0 (the old key stops now) to 7 days.', 'grace')
      const current = await find(id)
      if (!current || current.revokedAt !== null) return undefined
      scopesWithin(actor, current.scopes)
      planWithin(actor, current.plan, current.plan === 'enterprise' ? current.limits : null)
      const { secret, row } = newKeyRow({
        name: current.name,
        plan: current.plan,
        custom: current.plan === 'enterprise' ? current.limits : null,
        environment,
        scopes: current.scopes,
        expiresAt: current.expiresAt === null ? null : Date.parse(current.expiresAt),
        // Both keys count against one limit while both work.
        counterIdentity: current.counterIdentity,
      })
      const now = clock.now()
      const rolled = await apiKeys.roll(id, row, now + graceMs, now)
      if (!rolled) return undefined
      return { secret, key: await view(toApiKeyRecord(rolled.next)), old: await view(toApiKeyRecord(rolled.old)) }
    },

    async revoke(id: number): Promise<KeyView | undefined> {
      if (!(await apiKeys.revoke(id, clock.now()))) return undefined
      return this.get(id)
    },

    /** Lifts the key's ban; `lifted` is false when it was not banned. */
    async unban(id: number): Promise<{ key: KeyView; lifted: boolean } | undefined> {
      const key = await find(id)
      if (!key) return undefined
      const lifted = await limiter.unban(key.counterIdentity)
      return { key: await view(key), lifted }
    },
  }
}

export type KeyAdmin = ReturnType<typeof createKeyAdmin>
