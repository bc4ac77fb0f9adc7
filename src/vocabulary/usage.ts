// How a request ended, as the usage history counts it, and how long the history is
// kept: named once for the schemas, the store (which purges) and the usage room.

export const USAGE_OUTCOMES = ['ok', 'rate_limited', 'banned', 'forbidden', 'error'] as const
export type UsageOutcome = (typeof USAGE_OUTCOMES)[number]

export const USAGE_KEPT_DAYS = 90
export const USAGE_KEPT_MS = USAGE_KEPT_DAYS * 86_400_000
