// How long, as people write it to the CLI and to POST /v1/keys: `30d`, `12h`, `90m`,
// `45s`, or bare seconds (`3600`, or the number 3600 in JSON).
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** Milliseconds, or undefined when `value` is not a duration. */
export function durationMs(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value * 1_000 : undefined
  const match = /^(0|[1-9][0-9]{0,8})([smhd]?)$/.exec(value)
  if (!match) return undefined
  return Number(match[1]) * UNIT_MS[(match[2] || 's') as keyof typeof UNIT_MS]
}
