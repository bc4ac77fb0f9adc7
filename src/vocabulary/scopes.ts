// What a key may do (RFC 6750 §3.1 scopes). A write scope implies its read scope.
// Keys hold their scopes expanded (pets:write with pets:read), so a check is a lookup.

export const SCOPES = [
  'pets:read',
  'pets:write',
  'categories:read',
  'categories:write',
  'orders:read',
  'orders:write',
  'usage:read',
  'events:read',
  'webhooks:read',
  'webhooks:write',
  'keys:read',
  'keys:write',
] as const
export type Scope = (typeof SCOPES)[number]

export const SCOPE_PRESETS = {
  /** Everything but managing keys: what every key could do before scopes existed. */
  all: ['pets:read', 'pets:write', 'categories:read', 'categories:write', 'orders:read', 'orders:write', 'usage:read', 'events:read', 'webhooks:read', 'webhooks:write'],
  read_only: ['pets:read', 'categories:read', 'orders:read', 'usage:read', 'events:read', 'webhooks:read'],
} as const satisfies Record<string, readonly Scope[]>

export class ScopeError extends Error {
  override name = 'ScopeError'
}

const isScope = (value: string): value is Scope => (SCOPES as readonly string[]).includes(value)

/** The scopes with the reads their writes imply, in SCOPES order, without repeats. */
export function expandScopes(scopes: readonly Scope[]): Scope[] {
  const wanted = new Set<Scope>(scopes)
  for (const scope of scopes) if (scope.endsWith(':write')) wanted.add(scope.replace(':write', ':read') as Scope)
  return SCOPES.filter((scope) => wanted.has(scope))
}

/** A comma- or space-separated list of scopes and presets (`all`, `read_only`): `read_only`, `all,keys:write`; at least one. */
export function parseScopes(text: string): Scope[] {
  const names = text.trim().split(/[\s,]+/).filter((name) => name !== '')
  if (names.length === 0) throw new ScopeError(`scopes must be a preset (${Object.keys(SCOPE_PRESETS).join(', ')}) or a list of ${SCOPES.join(', ')}`)
  return scopesNamed(names)
}

/** Scopes and presets by name, presets expanded (none: no scope). */
export function scopesNamed(names: readonly string[]): Scope[] {
  const scopes: Scope[] = []
  for (const name of names) {
    if (Object.hasOwn(SCOPE_PRESETS, name)) scopes.push(...SCOPE_PRESETS[name as keyof typeof SCOPE_PRESETS])
    else if (isScope(name)) scopes.push(name)
    else throw new ScopeError(`unknown scope "${name}": use ${SCOPES.join(', ')}, or a preset (${Object.keys(SCOPE_PRESETS).join(', ')})`)
  }
  return expandScopes(scopes)
}

/** Scopes as stored: space-separated, as in an OAuth scope parameter. */
export const formatScopes = (scopes: readonly Scope[]): string => scopes.join(' ')

/** Scopes as stored back into a list; unknown names (from a newer version) are dropped. */
export const storedScopes = (text: string): Scope[] => expandScopes(text.split(' ').filter(isScope))

/** The scopes of `requested` that `own` does not have: what a key may not give another. */
export const scopesBeyond = (requested: readonly Scope[], own: readonly Scope[]): Scope[] => requested.filter((scope) => !own.includes(scope))
