import type { NewStoredAccount, NewStoredApiKey } from '../db/api-keys-store.js'
import { displayPrefix, generateApiKey, hashApiKey, type KeyEnvironment } from './key-format.js'
import { formatScopes, SCOPE_PRESETS, type Scope } from '../vocabulary/scopes.js'

export interface IssueKeyOptions {
  name: string
  /** An existing account's id, or the account to make with the key. */
  account: number | NewStoredAccount
  environment: KeyEnvironment
  /** Default: the `all` preset, every scope but keys:*. */
  scopes?: readonly Scope[]
  /** Unix ms; default: never. */
  expiresAt?: number | null
  disabledAt?: number | null
  disabledByOperator?: boolean
  /** The key making this one; default: the operator (null). */
  createdBy?: number | null
}

/** A new secret, and the row that stores it (its hash, never the secret itself). */
export function newKeyRow(options: IssueKeyOptions): { secret: string; row: NewStoredApiKey } {
  const secret = generateApiKey(options.environment)
  return {
    secret,
    row: {
      name: options.name,
      account: options.account,
      prefix: displayPrefix(secret),
      hash: hashApiKey(secret),
      scopes: formatScopes(options.scopes ?? SCOPE_PRESETS.all),
      expiresAt: options.expiresAt ?? null,
      disabledAt: options.disabledAt ?? null,
      disabledByOperator: options.disabledByOperator ?? false,
      createdBy: options.createdBy ?? null,
    },
  }
}
