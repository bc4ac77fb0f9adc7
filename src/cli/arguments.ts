// The one reader of integer arguments: key ids, limits, category ids, pet ids. Ranges
// beyond "positive and exact" (limit up to 100, a plan's caps) are the API's or the
// plan's to judge, with their own messages.
import { durationMs } from '../api-keys/duration.js'
import { USAGE_KEPT_DAYS } from '../vocabulary/usage.js'
import { CliError } from './cli-error.js'

export function positiveInteger(value: string, name: string, hint = ''): number {
  if (!/^[1-9][0-9]*$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new CliError(`${name} must be a positive integer${hint}, got "${value}"`)
  }
  return Number(value)
}

/** `30d`, `24h`, `90m`, `45s`, or `0`: milliseconds. */
export function duration(value: string, name: string): number {
  const ms = value === '0' || /[smhd]$/.test(value) ? durationMs(value) : undefined
  if (ms === undefined) throw new CliError(`${name} must be a number and a unit (s, m, h or d), such as 30d or 24h, got "${value}"`)
  return ms
}

/**
 * `--idempotency-key K` of a create over the API: sent as Idempotency-Key, so that the
 * command run again with the same K answers what the first run made instead of making
 * another (`answer`: "the first pet, not a second one"). Without it the client sends a
 * fresh key per run.
 */
export const idempotencyKeyFlag = (answer: string) => ({ value: 'K', description: `makes a retry of this command return ${answer}` })
export const idempotencyOption = (key: string | undefined): { idempotencyKey?: string } => (key === undefined ? {} : { idempotencyKey: key })

/** The `--days N` of a usage history (default 7): at most as many days as usage is kept. */
export const DAYS_FLAG = { value: 'N', description: `how many days back, 1 to ${USAGE_KEPT_DAYS} (default 7)` }
export function historyDays(value: string | undefined): number {
  const days = value === undefined ? 7 : positiveInteger(value, '--days')
  if (days > USAGE_KEPT_DAYS) throw new CliError(`--days must be at most ${USAGE_KEPT_DAYS}: usage is kept ${USAGE_KEPT_DAYS} days`)
  return days
}
