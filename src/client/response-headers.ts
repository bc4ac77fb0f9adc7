// Reading what the API says in headers: rate-limit state, Retry-After, the next
// page's cursor, deprecation.
import type { RateLimitState } from './errors.js'

/** Decision D7: `X-RateLimit-Limit`, `-Remaining` and `-Reset`; undefined unless all three are integers. */
export function parseRateLimit(headers: Headers): RateLimitState | undefined {
  const limit = integer(headers.get('x-ratelimit-limit'))
  const remaining = integer(headers.get('x-ratelimit-remaining'))
  const reset = integer(headers.get('x-ratelimit-reset'))
  if (limit === undefined || remaining === undefined || reset === undefined) return undefined
  return { limit, remaining, reset }
}

/** RFC 9110 §10.2.3: delay-seconds, or an HTTP-date; in whole seconds from `now`. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined
  const seconds = integer(value.trim())
  if (seconds !== undefined) return seconds
  const date = Date.parse(value)
  if (Number.isNaN(date)) return undefined
  return Math.max(0, Math.ceil((date - now) / 1000))
}

/**
 * Decision D4: the `cursor` of the RFC 8288 `Link: <…?cursor=…>; rel="next"`.
 * Only the cursor is taken, not the whole link: the link is path-absolute
 * (`/v1/pets?…`), which would drop a path prefix the base URL may have.
 */
export function nextCursor(link: string | null): string | undefined {
  if (link === null) return undefined
  for (const [, target, params] of link.matchAll(/<([^>]*)>((?:\s*;\s*[^;,]+)*)/g)) {
    const rel = /(?:^|;)\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))/i.exec(params ?? '')
    const relations = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/)
    if (relations.includes('next')) {
      return new URL(target ?? '', 'http://link.invalid/').searchParams.get('cursor') ?? undefined
    }
  }
  return undefined
}

/** RFC 9745 `Deprecation` and RFC 8594 `Sunset`, when the response carries them. */
export function parseDeprecation(headers: Headers): { sunset: string | undefined } | undefined {
  if (headers.get('deprecation') === null && headers.get('sunset') === null) return undefined
  return { sunset: headers.get('sunset') ?? undefined }
}

function integer(value: string | null): number | undefined {
  if (value === null || !/^\d{1,15}$/.test(value)) return undefined
  return Number(value)
}
