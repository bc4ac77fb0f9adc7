// Plans and their rate limits (spec, Limits). Enterprise limits are set per account.

export const PLANS = ['free', 'pro', 'business', 'enterprise'] as const
export type Plan = (typeof PLANS)[number]

export interface Limits {
  perMinute: number
  perDay: number
}

export const PLAN_LIMITS: Readonly<Record<Exclude<Plan, 'enterprise'>, Limits>> = {
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 },
}

export function isPlan(value: string): value is Plan {
  return (PLANS as readonly string[]).includes(value)
}

/** Limits of a key: the plan's, or for enterprise the key's own. */
export function limitsFor(plan: Plan, custom: Partial<Limits>): Limits {
  if (plan !== 'enterprise') return PLAN_LIMITS[plan]
  if (custom.perMinute === undefined || custom.perDay === undefined) {
    throw new Error('enterprise keys need their own per-minute and per-day limits')
  }
  return { perMinute: custom.perMinute, perDay: custom.perDay }
}

export class PlanError extends Error {
  override name = 'PlanError'
}

/**
 * Checks a plan and its custom limits as a user gave them: enterprise needs both
 * limits, the other plans take none (their limits are the plan's).
 */
export function checkPlan(plan: string, custom: Partial<Limits>): { plan: Plan; custom: Limits | null } {
  if (!isPlan(plan)) throw new PlanError(`unknown plan "${plan}": use one of ${PLANS.join(', ')}`)
  const given = custom.perMinute !== undefined || custom.perDay !== undefined
  if (plan !== 'enterprise') {
    if (given) throw new PlanError(`--per-minute and --per-day are for the enterprise plan; ${plan} has ${PLAN_LIMITS[plan].perMinute}/min and ${PLAN_LIMITS[plan].perDay}/day`)
    return { plan, custom: null }
  }
  if (custom.perMinute === undefined || custom.perDay === undefined) {
    throw new PlanError('the enterprise plan needs --per-minute N and --per-day N')
  }
  for (const [flag, value] of [['--per-minute', custom.perMinute], ['--per-day', custom.perDay]] as const) {
    if (!Number.isSafeInteger(value) || value < 1) throw new PlanError(`${flag} must be a positive integer`)
  }
  if (custom.perDay < custom.perMinute) throw new PlanError('--per-day must be at least --per-minute')
  return { plan, custom: { perMinute: custom.perMinute, perDay: custom.perDay } }
}
