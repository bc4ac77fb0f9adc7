// The client's retry policy as pure functions: which failures are worth another
// attempt, and how long to wait before it.

export interface RetryPolicy {
  /** Requests sent for one call, the first included. */
  maxAttempts: number
  /** A `Retry-After` longer than this is not waited out: the call fails at once. */
  maxRetryAfterSeconds: number
  /** Backoff bound of the first retry; it doubles with each retry… */
  baseDelayMs: number
  /** …up to this. */
  maxDelayMs: number
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 4,
  maxRetryAfterSeconds: 60,
  baseDelayMs: 1_000,
  maxDelayMs: 30_000,
})

/** What went wrong with one attempt. */
export type Failure =
  | { kind: 'network' }
  | { kind: 'response'; status: number; code: string | undefined; retryAfterSeconds: number | undefined }

export type RetryDecision = { retry: true; delayMs: number } | { retry: false; reason?: string }

export interface RetryContext {
  /** Attempts made so far (1 after the first). */
  attempt: number
  /**
   * Whether sending the request again cannot do its work twice: true for GETs, and
   * for a POST that carries an Idempotency-Key (the server replays the first answer).
   */
  repeatable: boolean
  policy: RetryPolicy
  /** A number in [0, 1), as Math.random gives. */
  random: () => number
}

export function decideRetry(failure: Failure, { attempt, repeatable, policy, random }: RetryContext): RetryDecision {
  if (!isRetryable(failure, repeatable)) return { retry: false }
  const retryAfter = failure.kind === 'response' ? failure.retryAfterSeconds : undefined
  if (retryAfter !== undefined && retryAfter > policy.maxRetryAfterSeconds) {
    return {
      retry: false,
      reason: `The client did not wait: Retry-After is ${retryAfter} s, longer than maxRetryAfterSeconds (${policy.maxRetryAfterSeconds} s).`,
    }
  }
  if (attempt >= policy.maxAttempts) return { retry: false }
  // The server knows when the window or the ban ends: its Retry-After wins over our guess.
  const delayMs = retryAfter !== undefined ? retryAfter * 1000 : fullJitterDelay(attempt, policy, random)
  return { retry: true, delayMs }
}

function isRetryable(failure: Failure, repeatable: boolean): boolean {
  // A lost connection may have lost the answer, not the request.
  if (failure.kind === 'network') return repeatable
  const { status, code } = failure
  // The rate limit refuses a request before it runs: safe to send again, whatever it is.
  if (status === 429) return true
  // Only an Idempotency-Key's first request still running answers 409; its retry gets the replay.
  if (status === 409) return repeatable && code === 'idempotency_key_in_use'
  // The server says it did nothing (a write it may have done is `outcome_unknown`): safe to send again.
  if (status === 503 && code === 'service_unavailable') return true
  return repeatable && (status === 408 || status >= 500)
}

/**
 * "Full jitter" (AWS Architecture Blog, "Exponential Backoff And Jitter"): a delay
 * drawn between 0 and min(cap, base · 2^(retry - 1)), so that clients refused
 * together do not come back together.
 */
export function fullJitterDelay(retry: number, policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>, random: () => number): number {
  const bound = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1))
  return Math.floor(random() * bound)
}
