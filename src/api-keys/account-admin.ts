// Accounts (decision D11): the owner of keys and of everything they make, with the plan
// and limits all its keys share. Made and changed by the operator alone (the command
// line); a key reads its own account (GET /v1/account), and itself with it.
import type { Clock } from '../clock.js'
import type { AccountsStore, StoredAccount } from '../db/api-keys-store.js'
import type { ApiKeyRecord } from './api-key-record.js'
import type { KeyAdmin, KeyView } from './key-admin.js'
import { checkPlan, limitsFor, type Limits, type Plan } from '../vocabulary/plans.js'
import type { Scope } from '../vocabulary/scopes.js'

export interface AccountView {
  id: number
  name: string
  plan: Plan
  limits: Limits
  status: 'active' | 'disabled'
  createdAt: string
  disabledAt: string | null
  /** Keys of the account, revoked ones included. */
  keyCount: number
}

/** The calling key as it reads itself: what it may do and until when, without `keys:read` (the fields of schemas/key.ts's CallingKey). */
export type CallingKeyView = Pick<KeyView, 'id' | 'name' | 'prefix' | 'scopes' | 'createdAt' | 'expiresAt'>

export interface NewAccountInput {
  plan: string
  name?: string
  limits?: Partial<Limits>
  scopes?: readonly Scope[]
  expiresInMs?: number
}

export function createAccountAdmin({ accounts, keyAdmin, clock }: { accounts: AccountsStore; keyAdmin: KeyAdmin; clock: Clock }) {
  function view(account: StoredAccount, keyCount: number): AccountView {
    const plan = account.plan as Plan
    return {
      id: account.id,
      name: account.name,
      plan,
      limits: limitsFor(plan, account.custom ?? {}),
      status: account.disabledAt === null ? 'active' : 'disabled',
      createdAt: new Date(account.createdAt).toISOString(),
      disabledAt: account.disabledAt === null ? null : new Date(account.disabledAt).toISOString(),
      keyCount,
    }
  }

  /** The accounts' views, with their key counts read in one query for all of them. */
  async function views(list: readonly StoredAccount[]): Promise<AccountView[]> {
    const counts = await accounts.keyCounts(list.map((account) => account.id))
    return list.map((account) => view(account, counts.get(account.id) ?? 0))
  }

  return {
    async get(id: number): Promise<AccountView | undefined> {
      const account = await accounts.findById(id)
      return account && (await views([account]))[0]
    },

    /**
     * The calling key's account, and the key itself: a key may always learn its own
     * scopes (the console offers only what they allow), never another key's.
     */
    async forKey(key: ApiKeyRecord): Promise<(AccountView & { callingKey: CallingKeyView }) | undefined> {
      const account = await this.get(key.accountId)
      const { id, name, prefix, scopes, createdAt, expiresAt } = key
      return account && { ...account, callingKey: { id, name, prefix, scopes, createdAt, expiresAt } }
    },

    async page(afterId: number, limit: number): Promise<AccountView[]> {
      return views(await accounts.page(afterId, limit))
    },

    /** A new account with its first key: the only time the key's secret is shown. */
    async create(input: NewAccountInput): Promise<{ account: AccountView; secret: string; key: KeyView }> {
      const { secret, key } = await keyAdmin.create(input)
      return { account: (await this.get(key.accountId))!, secret, key }
    },

    /** Moves the account to another plan (enterprise: with its own limits, kept when not given). */
    async setPlan(id: number, planName: string, limits: Partial<Limits> = {}): Promise<AccountView | undefined> {
      const current = await accounts.findById(id)
      if (!current) return undefined
      const kept = planName === 'enterprise' && current.plan === 'enterprise' ? { ...current.custom, ...limits } : limits
      const checked = checkPlan(planName, kept)
      const changed = await accounts.update(id, { plan: checked.plan, custom: checked.custom })
      return changed && (await views([changed]))[0]
    },

    /** Disabling refuses every key of the account (401) until it is enabled again. */
    async setEnabled(id: number, enabled: boolean): Promise<AccountView | undefined> {
      const current = await accounts.findById(id)
      if (!current) return undefined
      const disabledAt = enabled ? null : (current.disabledAt ?? clock.now())
      const changed = await accounts.update(id, { disabledAt })
      return changed && (await views([changed]))[0]
    },
  }
}

export type AccountAdmin = ReturnType<typeof createAccountAdmin>
