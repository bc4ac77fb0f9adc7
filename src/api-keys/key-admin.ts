// Managing keys: create, list, read, change, roll, revoke and unban. The one service
// layer under both the command line (cli/keys.ts, the operator at the server's shell)
// and the admin API (routes/v1/keys.ts, a key with keys:write: the `actor`).
//
// Authority (decision D11): an actor manages the keys of its own account only (any
// other is "not found"), never a key holding a scope it lacks, and never grants what
// it lacks: no scope beyond its own, no expiry later than its own. Plans, limits and
// accounts are the operator's alone. A key may revoke itself, but lift neither its own
// ban nor its maker's. A key that expires gives no more power to a key that outlives it
// (no roll, no added scope, no enabling). And what a key does to keys is refused once it
// is revoked, even while caches elsewhere still let its requests through.
import type { Clock } from '../clock.js'
import { ActingKeyRefused, KeyLimitReached, type ApiKeyChanges, type ApiKeysStore, type NewStoredAccount, type StoredApiKey } from '../db/api-keys-store.js'
import type { SealingCompletion } from '../idempotency/idempotency.js'
import type { RateLimiter } from '../rate-limit/limiter.js'
import { keyState, toApiKeyRecord, type ApiKeyRecord } from './api-key-record.js'
import { newKeyRow } from './issue-key.js'
import type { KeyEnvironment } from './key-format.js'
import { checkPlan, type Limits, type Plan } from '../vocabulary/plans.js'
import { StoreUnavailableError } from '../db/store-errors.js'
import { formatScopes, scopesBeyond, SCOPE_PRESETS, storedScopes, type Scope } from '../vocabulary/scopes.js'
import { LABEL_PATTERN, LABEL_TEXT_NOTE } from '../schemas/text.js'

/** What the schema's LABEL_TEXT refuses in a name, as a RegExp (u: a paired surrogate is one code point, as Ajv compiles it). */
const LABEL = new RegExp(LABEL_PATTERN, 'u')

export const MAX_EXPIRY_MS = 366 * 86_400_000
export const MAX_GRACE_MS = 7 * 86_400_000
/** The longest name of a key or an account, as the API's schema has it (schemas/key.ts `Name`). */
export const MAX_NAME_LENGTH = 100
export const DEFAULT_GRACE_MS = 86_400_000

export type KeyStatus = 'active' | 'disabled' | 'expired' | 'revoked' | 'banned'

/** A key as the API and `keys show --json` present it: never the secret. */
export interface KeyView {
  id: number
  /** The account that owns the key, its plan and its limits. */
  accountId: number
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
  /** The key that made this one over the API; null: the operator. */
  createdBy: number | null
}

/** A request the service refuses: `field` names what was wrong; `beyond` marks a key asking for more than it has (403). */
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

/** A key in a state the change cannot apply to: revoked (for good), or rolled already (its successor is the key to roll). */
export class KeyStateConflict extends KeyAdminError {
  override name = 'KeyStateConflict'
  constructor(
    message: string,
    readonly code: 'key_revoked' | 'key_already_rolled',
  ) {
    super(message, 'keyId')
  }
}

/**
 * The acting key was revoked, expired or disabled (or its account) while its request ran,
 * before the change committed: nothing was changed, and the request is answered as a
 * request with that key now is (401).
 */
export class ActorRefused extends Error {
  override name = 'ActorRefused'
  constructor(readonly keyId: number) {
    super(`This API key (key ${keyId}) is no longer active: it was revoked, expired or disabled (or its account was), and this process had not heard yet. Nothing was changed.`)
  }
}

/**
 * The acting key, as the store has it now, no longer holds `lacking` (keys:write, or a
 * scope the key written would get): its scopes were narrowed, and this process's cache
 * (or another instance's) still had the old ones.
 */
export class ActorLacksScope extends Error {
  override name = 'ActorLacksScope'
  constructor(
    readonly actor: ApiKeyRecord,
    readonly lacking: readonly Scope[],
  ) {
    super(`This API key (key ${actor.id}) no longer holds ${lacking.join(', ')}.`)
  }
}

/**
 * The account has as many live keys as a key may make (PETSTORE_MAX_KEYS), or, for a
 * roll, twice as many (those in a roll's grace period included); the operator is not
 * held to either.
 */
export class KeysLimitReached extends Error {
  override name = 'KeysLimitReached'
  constructor(
    readonly limit: number,
    rolling = false,
  ) {
    super(
      rolling
        ? `The account has ${limit} live keys (not revoked, not expired), those still in a roll's grace period included: a roll keeps the old key live through its grace, and a key may roll while the account has fewer than twice the keys its keys may make. Revoke keys it no longer uses (POST /v1/keys/{id}/revoke), or wait for a grace period to end. The operator sets the number (PETSTORE_MAX_KEYS) and is not held to it.`
        : `The account has ${limit} live keys (not revoked, not expired), as many as its keys may make: revoke one it no longer uses (POST /v1/keys/{id}/revoke), or roll one (a roll is counted only against twice that number). The operator sets the number (PETSTORE_MAX_KEYS) and is not held to it.`,
    )
  }
}

/**
 * The key, as the store reads it in the write's transaction, may still act (make or roll
 * a key): active (else 401), holding keys:write and every scope the key written gets
 * (else 403, `lacking` says which). A revocation or narrowing committed since the actor
 * was read refuses the write.
 */
function mayAct(actor: ApiKeyRecord, clock: Clock, gives: readonly Scope[]) {
  const check = {
    id: actor.id,
    lacking: undefined as ActorLacksScope | undefined,
    mayAct: (stored: StoredApiKey) => {
      const now = toApiKeyRecord(stored)
      if (keyState(now, clock.now()) !== 'active') return false
      const lacking = now.scopes.includes('keys:write') ? scopesBeyond(gives, now.scopes) : ['keys:write' as const]
      if (lacking.length > 0) check.lacking = new ActorLacksScope(now, lacking)
      return lacking.length === 0
    },
  }
  return check
}

/** The store's refusals of a write by a key (`acting`, its check), as the service's; anything else as it is. */
const actorRefused = (error: unknown, acting: ReturnType<typeof mayAct> | undefined, rolling = false): never => {
  if (error instanceof ActingKeyRefused) throw acting?.lacking ?? new ActorRefused(error.keyId)
  if (error instanceof KeyLimitReached) throw new KeysLimitReached(error.limit, rolling)
  throw error
}

/** Disabled, and by the operator: enabled again by the operator alone. */
const stoppedByOperator = (key: ApiKeyRecord) => key.disabledAt !== null && key.disabledByOperator

const revokedKey = (id: number) => new KeyStateConflict(`Key ${id} is revoked: it can no longer be changed or rolled.`, 'key_revoked')
const rolledAlready = (id: number, into: number) => new KeyStateConflict(`Key ${id} was rolled already, into key ${into}: roll key ${into} instead.`, 'key_already_rolled')

export interface NewKeyInput {
  name?: string
  scopes?: readonly Scope[]
  /** Milliseconds from now; at most a year. */
  expiresInMs?: number
  /** The operator's alone: the account to add the key to… */
  accountId?: number
  /** …or the plan of a new account made with the key. */
  plan?: string
  limits?: Partial<Limits>
}

export interface KeyUpdateInput {
  name?: string
  scopes?: readonly Scope[]
  enabled?: boolean
}

export interface KeyAdminOptions {
  apiKeys: ApiKeysStore
  /** For bans: a key's status, and lifting them. */
  limiter: Pick<RateLimiter, 'peek' | 'unban'>
  clock: Clock
  environment: KeyEnvironment
  /** Told the keys whose records a change made here altered: this instance's authenticator forgets them. */
  onChanged?: (keyIds: readonly number[]) => void
  /** Live keys an account may have for a key of it to make another (PETSTORE_MAX_KEYS); the operator is not held to it. Default: no limit. */
  maxKeys?: number
}

export function createKeyAdmin({ apiKeys, limiter, clock, environment, onChanged = () => {}, maxKeys }: KeyAdminOptions) {
  async function view(key: ApiKeyRecord): Promise<KeyView> {
    const state = keyState(key, clock.now())
    if (state !== 'active') return viewAs(key, state, null)
    const windows = await limiter.peek(key, key.limits)
    return windows.bannedUntil === undefined ? viewAs(key, 'active', null) : viewAs(key, 'banned', new Date(windows.bannedUntil).toISOString())
  }

  function viewAs(key: ApiKeyRecord, status: KeyStatus, bannedUntil: string | null): KeyView {
    return {
      id: key.id,
      accountId: key.accountId,
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
      createdBy: key.createdBy,
    }
  }

  /**
   * The key `id` if `actor` may see it: undefined when there is none or it is another
   * account's (the same answer, so ids of other accounts cannot be probed).
   */
  async function visible(id: number, actor?: ApiKeyRecord): Promise<ApiKeyRecord | undefined> {
    const stored = await apiKeys.findById(id)
    const key = stored && toApiKeyRecord(stored)
    return key && (!actor || key.accountId === actor.accountId) ? key : undefined
  }

  /**
   * The actor as the store has it now (undefined: the operator), which every check of a
   * change to keys then reads. Refuses (401) one the store says is revoked, expired or
   * disabled, and (403) one no longer holding keys:write: caches elsewhere may still let
   * its requests through, with the scopes it had, for a few seconds (D6), but not its
   * changes to keys. A key narrowed on one instance made a key with keys:write on another.
   */
  async function acting(actor: ApiKeyRecord | undefined): Promise<ApiKeyRecord | undefined> {
    if (!actor) return undefined
    const stored = await apiKeys.findById(actor.id)
    const now = stored && toApiKeyRecord(stored)
    if (!now || keyState(now, clock.now()) !== 'active') throw new ActorRefused(actor.id)
    if (!now.scopes.includes('keys:write')) throw new ActorLacksScope(now, ['keys:write'])
    return now
  }

  /** The key `id` if `actor` (as it stands: see acting) may act on it: visible to it, and holding no scope it lacks (forbidden). */
  async function target(id: number, actor: ApiKeyRecord | undefined): Promise<ApiKeyRecord | undefined> {
    const key = await visible(id, actor)
    const beyond = key && actor ? scopesBeyond(key.scopes, actor.scopes) : []
    if (beyond.length > 0) {
      throw new KeyAdminError(`Key ${id} holds ${beyond.join(', ')}, which this key lacks: a key manages only keys with no scope beyond its own.`, 'keyId', true)
    }
    return key
  }

  /** The account a new key goes to: the actor's own, or (the operator's choice) one named or one made with it. */
  function accountFor(input: NewKeyInput, actor: ApiKeyRecord | undefined): number | NewStoredAccount {
    const limitsGiven = input.limits?.perMinute !== undefined || input.limits?.perDay !== undefined
    if (actor) {
      if (input.plan !== undefined || limitsGiven || input.accountId !== undefined) {
        throw new KeyAdminError('Plans, limits and accounts are the operator\'s: a key makes keys in its own account, on its plan.', 'plan', true)
      }
      return actor.accountId
    }
    if (input.accountId !== undefined) {
      if (limitsGiven) throw new KeyAdminError(`A key shares its account's limits: change them with "petstore accounts set-plan ${input.accountId} enterprise --per-minute N --per-day N".`, 'limits')
      return input.accountId
    }
    if (input.plan === undefined) throw new KeyAdminError('A key needs an account: give a plan (a new account) or an account id.', 'plan')
    const { plan, custom } = checkPlan(input.plan, input.limits ?? {})
    return { name: input.name ?? `${plan} account`, plan, custom }
  }

  /**
   * Refuses a name the API's schema refuses (schemas/key.ts `Name`): the command line
   * comes here without it, and what it stored was then served against the document.
   */
  function nameWithin(name: string | undefined) {
    if (name === undefined) return
    const length = [...name].length
    if (length < 1 || length > MAX_NAME_LENGTH || LABEL.test(name)) {
      throw new KeyAdminError(`A name is 1 to ${MAX_NAME_LENGTH} characters: ${LABEL_TEXT_NOTE} (this one has ${length}).`, 'name')
    }
  }

  /** Refuses scopes that `actor` (a key acting through the API) does not have itself. */
  function scopesWithin(actor: ApiKeyRecord | undefined, scopes: readonly Scope[]) {
    const extra = actor ? scopesBeyond(scopes, actor.scopes) : []
    if (extra.length > 0) throw new KeyAdminError(`A key cannot give scopes it does not have: ${extra.join(', ')}.`, 'scopes', true)
  }

  /** The new key's expiry: asked for, and for a key made by a key no later than its maker's (its maker's when not asked). */
  function expiryWithin(actor: ApiKeyRecord | undefined, expiresInMs: number | undefined, now: number): number | null {
    if (expiresInMs !== undefined && (expiresInMs <= 0 || expiresInMs > MAX_EXPIRY_MS)) {
      throw new KeyAdminError('A key expires at most a year (366 days) from now, and later than now.', 'expiresIn')
    }
    const asked = expiresInMs === undefined ? null : now + expiresInMs
    const limit = actor && actor.expiresAt !== null ? Date.parse(actor.expiresAt) : null
    if (limit === null) return asked
    if (asked === null) return limit
    if (asked > limit) throw new KeyAdminError(`A key cannot make a key that outlives it: this key expires at ${actor!.expiresAt}.`, 'expiresIn', true)
    return asked
  }

  /** Refuses `what` when `actor` expires and `key` outlives it: its power would outlast the actor's own. */
  function notOutliving(actor: ApiKeyRecord | undefined, key: Pick<ApiKeyRecord, 'id' | 'expiresAt'>, what: string) {
    if (actor?.expiresAt == null || (key.expiresAt !== null && Date.parse(key.expiresAt) <= Date.parse(actor.expiresAt))) return
    throw new KeyAdminError(`A key cannot ${what} a key that outlives it: this key expires at ${actor.expiresAt}, key ${key.id} ${key.expiresAt === null ? 'never does' : `at ${key.expiresAt}`}.`, 'keyId', true)
  }

  const fresh = (stored: StoredApiKey) => viewAs(toApiKeyRecord(stored), stored.disabledAt === null ? 'active' : 'disabled', null)

  /** What `input` changes of `current`, or the refusal (throws). */
  function changesOf(id: number, input: KeyUpdateInput, current: ApiKeyRecord, actor: ApiKeyRecord | undefined): ApiKeyChanges {
    if (current.revokedAt !== null) throw revokedKey(id)
    const changes: ApiKeyChanges = {}
    if (input.name !== undefined) changes.name = input.name
    if (input.scopes !== undefined) {
      scopesWithin(actor, input.scopes)
      if (scopesBeyond(input.scopes, current.scopes).length > 0) notOutliving(actor, current, 'add scopes to')
      changes.scopes = formatScopes(input.scopes)
    }
    if (input.enabled !== undefined) {
      if (input.enabled && current.disabledAt !== null) notOutliving(actor, current, 'enable')
      // The operator's stop holds against the account's own keys: they enable a key they
      // (or the operator before them) did not stop only if no operator stopped it.
      if (input.enabled && actor && stoppedByOperator(current)) {
        throw new KeyAdminError(`Key ${id} was disabled by the operator, who alone can enable it again (npx petstore keys enable ${id}).`, 'enabled', true)
      }
      changes.disabledAt = input.enabled ? null : current.disabledAt === null ? clock.now() : Date.parse(current.disabledAt)
      // Disabled again by a key: the operator's mark stays on a key already stopped by the operator.
      changes.disabledByOperator = !input.enabled && (actor === undefined || stoppedByOperator(current))
    }
    return changes
  }

  return {
    view,

    /**
     * With `completion` (an Idempotency-Key), the 201 body is stored in the insert's
     * transaction, and the secret beside it sealed (never in the clear): a replay
     * answers the same key and secret.
     */
    async create(input: NewKeyInput, caller?: ApiKeyRecord, completion?: SealingCompletion): Promise<{ secret: string; key: KeyView }> {
      const scopes = input.scopes ?? SCOPE_PRESETS.all
      nameWithin(input.name)
      const actor = await acting(caller)
      scopesWithin(actor, scopes)
      const now = clock.now()
      const expiresAt = expiryWithin(actor, input.expiresInMs, now)
      const account = accountFor(input, actor)
      const { secret, row } = newKeyRow({
        name: input.name ?? (typeof account === 'number' ? 'key' : `${account.plan} key`),
        account,
        environment,
        scopes,
        expiresAt,
        createdBy: actor?.id ?? null,
      })
      const actingKey = actor && mayAct(actor, clock, scopes)
      const stored = await apiKeys
        .insert({ ...row, ...(actingKey && { actingKey, liveKeysAtMost: maxKeys }) }, now, completion && { completion, body: (inserted) => ({ apiKey: fresh(inserted) }), sealedSecret: completion.seal(secret) })
        .catch((error: unknown) => actorRefused(error, actingKey))
      return { secret, key: fresh(stored) }
    },

    /**
     * Refuses (403) to hand the actor, in an Idempotency-Key's replay, a key it could not
     * make now: its own scopes narrowed or expiry brought forward since the create, or
     * the key made widened or given a later expiry since (judged as it stands, as the
     * secret is).
     */
    async replayableBy(caller: ApiKeyRecord, made: Pick<KeyView, 'id' | 'scopes' | 'expiresAt'>): Promise<void> {
      const actor = (await acting(caller))!
      const now = (await visible(made.id, actor)) ?? made
      scopesWithin(actor, now.scopes)
      notOutliving(actor, now, 'be handed')
    },

    /** A page of keys: the actor's account's, or (the operator) every account's or one's. */
    async page(afterId: number, limit: number, actor?: ApiKeyRecord, accountId?: number): Promise<KeyView[]> {
      const stored = await apiKeys.page(actor?.accountId ?? accountId, afterId, limit)
      return Promise.all(stored.map((key) => view(toApiKeyRecord(key))))
    },

    /** The key, when the actor (if any) may see it: its own account's. */
    async get(id: number, actor?: ApiKeyRecord): Promise<KeyView | undefined> {
      const key = await visible(id, actor)
      return key && view(key)
    },

    /** The key, when the actor (if any) may see it, without the status a view asks the limiter for: to scope a query by it. */
    find: visible,

    async update(id: number, input: KeyUpdateInput, caller?: ApiKeyRecord): Promise<KeyView | undefined> {
      nameWithin(input.name)
      const actor = await acting(caller)
      // A key's change of `enabled` is written only while the operator's mark is as it was
      // read: a `petstore keys disable` committed in between was undone (or its mark
      // erased) by a tenant sending PATCH {"enabled": true} again and again. Then it is
      // judged again, on the key as it now stands.
      for (let attempt = 1; ; attempt++) {
        const current = await target(id, actor)
        if (!current) return undefined
        const changes = changesOf(id, input, current, actor)
        if (actor && input.enabled !== undefined) changes.whileDisabledByOperator = current.disabledByOperator
        const stored = await apiKeys.update(id, changes)
        if (stored && changes.whileDisabledByOperator !== undefined && stored.disabledByOperator !== current.disabledByOperator) {
          if (attempt < 3) continue
          throw new StoreUnavailableError(`key ${id} was changed by the operator meanwhile, three times`, { outcome: 'not_written' })
        }
        onChanged([id])
        return stored && view(toApiKeyRecord(stored))
      }
    },

    /** A new key in the same account with the same name, scopes, expiry and maker (disabled if the old one is); the old one works until `graceMs` from now. */
    async roll(id: number, graceMs: number, caller?: ApiKeyRecord): Promise<{ secret: string; key: KeyView; old: KeyView } | undefined> {
      if (graceMs < 0 || graceMs > MAX_GRACE_MS) throw new KeyAdminError('The grace period is from 0 (the old key stops now) to 7 days.', 'grace')
      const actor = await acting(caller)
      const current = await target(id, actor)
      if (!current) return undefined
      if (current.revokedAt !== null) throw revokedKey(id)
      // Rolled once, a key ends with its grace period and its successor carries on: a
      // second roll would give a key whose expiry is that grace period's end, and hide it
      // (and what the old key made meanwhile) from a cascading revoke of the successor.
      if (current.replacedBy !== null) throw rolledAlready(id, current.replacedBy)
      // A key replaced by a roll (in its grace period) rolls nothing: its successor, its own
      // making, would be in reach, and rolled with grace 0, stopped for a secret of its own.
      if (actor?.replacedBy != null) throw new KeyAdminError(`This key was replaced by a roll, by key ${actor.replacedBy}: it rolls no key; key ${actor.replacedBy} can.`, 'keyId', true)
      // The roll's secret goes to the actor: a key that expires would get one that outlives it.
      notOutliving(actor, current, 'roll')
      // Nor may a key be handed the secret of a key outside its own cascade (the keys it
      // made, however deep, and their rolls): revoking the actor with cascade must reach
      // every secret it was given. A leaked key rolled the owner's key, and kept it.
      if (actor && actor.id !== id && !(await apiKeys.cascadeOf(actor.id)).some((key) => key.id === id)) {
        throw new KeyAdminError(
          `Key ${id} was not made by this key, nor by a key it made: a key rolls only itself and those, as the roll hands it the new secret. The operator can roll any key (npx petstore keys roll ${id}); or make a new key, move to it, and revoke key ${id}.`,
          'keyId',
          true,
        )
      }
      const { secret, row } = newKeyRow({
        name: current.name,
        account: current.accountId,
        environment,
        scopes: current.scopes,
        expiresAt: current.expiresAt === null ? null : Date.parse(current.expiresAt),
        disabledAt: current.disabledAt === null ? null : Date.parse(current.disabledAt),
        disabledByOperator: stoppedByOperator(current),
        // Rolled by itself, the new key is the old one's making: its holder was handed the
        // secret, and a cascading revoke of the old key must reach it. Rolled by its maker
        // (or theirs, or the operator), it is theirs, as the old one was.
        createdBy: actor?.id === id ? id : current.createdBy,
      })
      const now = clock.now()
      // A roll by a key is held to twice the keys a key may make, counted with the key it
      // makes: each roll with a grace period leaves one more key live for up to 7 days,
      // and rolling the newest again at once made keys without end. The count is taken
      // before the old key ends: with no grace it is one more than will be live, and the
      // roll (a leaked key's rotation) adds none.
      const liveKeysAtMost = maxKeys === undefined ? undefined : 2 * maxKeys + (graceMs === 0 ? 1 : 0)
      const actingKey = actor && mayAct(actor, clock, current.scopes)
      const rolled = await apiKeys
        .roll(id, { ...row, ...(actingKey && { actingKey, liveKeysAtMost }) }, now + graceMs, now)
        .catch((error: unknown) => actorRefused(error, actingKey, true))
      if (!rolled) {
        // Rolled or revoked meanwhile (by a roll sent at the same time): say which, as above.
        const after = await visible(id, actor)
        if (after?.revokedAt != null) throw revokedKey(id)
        if (after?.replacedBy != null) throw rolledAlready(id, after.replacedBy)
        return undefined
      }
      onChanged([id])
      return { secret, key: await view(toApiKeyRecord(rolled.next)), old: await view(toApiKeyRecord(rolled.old)) }
    },

    /** Revokes the key, and with `cascade` every key it made, however deep: the key, and the ids revoked now. */
    async revoke(id: number, caller?: ApiKeyRecord, cascade = false): Promise<{ key: KeyView; revoked: number[] } | undefined> {
      const actor = await acting(caller)
      if (!(await target(id, actor))) return undefined
      if (cascade && actor) {
        // What the key made may hold more than it does now (its scopes narrowed since, or
        // theirs widened by another key): the rule holds for each key the cascade reaches.
        const beyond = (await apiKeys.cascadeOf(id)).filter((key) => scopesBeyond(storedScopes(key.scopes), actor.scopes).length > 0).map((key) => key.id)
        if (beyond.length > 0) {
          throw new KeyAdminError(`The cascade from key ${id} reaches key${beyond.length > 1 ? 's' : ''} ${beyond.join(', ')}, holding scopes this key lacks: a key revokes only keys with no scope beyond its own. Revoke with a key that holds them, or the operator (npx petstore keys revoke ${id} --cascade).`, 'cascade', true)
        }
      }
      const revoked = await apiKeys.revoke(id, clock.now(), cascade)
      onChanged([id, ...(revoked ?? [])])
      const key = revoked && (await this.get(id))
      return key && { key, revoked }
    },

    /** Lifts the key's ban; `lifted` is false when it was not banned. */
    async unban(id: number, caller?: ApiKeyRecord): Promise<{ key: KeyView; lifted: boolean } | undefined> {
      const actor = await acting(caller)
      const key = await target(id, actor)
      if (!key) return undefined
      if (actor?.id === id) throw new KeyAdminError('A key cannot lift its own ban: another key with keys:write, or the operator, can.', 'keyId', true)
      // Nor that of its maker, their makers, or a key of its own roll (the key it replaced,
      // the key that replaced it: the same credential): a key about to flood could make a
      // grandchild, or roll itself, first.
      if (actor && (await apiKeys.ancestors(actor.id)).includes(id)) {
        throw new KeyAdminError(`Key ${id} made this key, or a key that made it, or is this key rolled: it cannot lift that key's ban. The operator can (npx petstore keys unban ${id}).`, 'keyId', true)
      }
      const lifted = await limiter.unban(key)
      return { key: await view(key), lifted }
    },
  }
}

export type KeyAdmin = ReturnType<typeof createKeyAdmin>
