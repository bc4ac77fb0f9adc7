// The client's retry policy and header parsing, without HTTP.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { nextCursor, parseRateLimit, parseRetryAfter } from '../../src/client/response-headers.js'
import { DEFAULT_RETRY_POLICY, decideRetry, fullJitterDelay, type Failure } from '../../src/client/retry.js'

const policy = DEFAULT_RETRY_POLICY
const response = (status: number, retryAfterSeconds?: number, code?: string): Failure => ({ kind: 'response', status, code, retryAfterSeconds })
const decide = (failure: Failure, repeatable = true, attempt = 1) => decideRetry(failure, { attempt, repeatable, policy, random: () => 0.5 })

describe('client retry policy', () => {
  it('draws full-jitter delays between 0 and min(cap, base · 2^(retry-1))', () => {
    assert.deepEqual(
      [1, 2, 3, 4].map((retry) => fullJitterDelay(retry, policy, () => 0.999999)),
      [999, 1999, 3999, 7999],
    )
    assert.equal(fullJitterDelay(20, policy, () => 0.5), 15_000) // capped at 30 s
    assert.equal(fullJitterDelay(3, policy, () => 0), 0)
  })

  it('waits Retry-After on a 429 for any request, repeatable or not', () => {
    assert.deepEqual(decide(response(429, 15), false), { retry: true, delayMs: 15_000 })
    assert.deepEqual(decide(response(429, 0)), { retry: true, delayMs: 0 })
    assert.deepEqual(decide(response(429)), { retry: true, delayMs: 500 })
  })

  it('gives up, saying why, when Retry-After is longer than maxRetryAfterSeconds', () => {
    const decision = decide(response(429, 61))
    assert.equal(decision.retry, false)
    assert.match((decision as { reason: string }).reason, /Retry-After is 61 s, longer than maxRetryAfterSeconds \(60 s\)/)
    assert.equal(decide(response(429, 60)).retry, true)
  })

  it('retries network failures, 408 and 5xx only for repeatable requests', () => {
    for (const failure of [{ kind: 'network' } as const, response(500), response(502), response(503, 2), response(408)]) {
      assert.equal(decide(failure, true).retry, true, JSON.stringify(failure))
      assert.deepEqual(decide(failure, false), { retry: false }, JSON.stringify(failure))
    }
  })

  it('retries a 503 service_unavailable (nothing was done) for any request, and outcome_unknown only with an Idempotency-Key', () => {
    assert.deepEqual(decide(response(503, 1, 'service_unavailable'), false), { retry: true, delayMs: 1000 })
    assert.deepEqual(decide(response(503, 1, 'outcome_unknown'), false), { retry: false })
    assert.deepEqual(decide(response(503, 1, 'outcome_unknown'), true), { retry: true, delayMs: 1000 })
  })

  it('retries 409 only for idempotency_key_in_use', () => {
    assert.deepEqual(decide(response(409, 1, 'idempotency_key_in_use')), { retry: true, delayMs: 1000 })
    assert.deepEqual(decide(response(409, 1, 'conflict')), { retry: false })
  })

  it('never retries other client errors', () => {
    for (const status of [400, 401, 404, 410, 413, 415, 422]) assert.deepEqual(decide(response(status)), { retry: false })
  })

  it('stops at maxAttempts', () => {
    assert.equal(decide(response(503), true, policy.maxAttempts - 1).retry, true)
    assert.deepEqual(decide(response(503), true, policy.maxAttempts), { retry: false })
  })
})

describe('client header parsing', () => {
  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-22T10:00:00Z')
    assert.equal(parseRetryAfter('15', now), 15)
    assert.equal(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now), 30)
    assert.equal(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now), 0)
    assert.equal(parseRetryAfter(null, now), undefined)
    assert.equal(parseRetryAfter('soon', now), undefined)
  })

  it('reads the X-RateLimit-* state only when all three headers are integers', () => {
    const headers = new Headers({ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1795305660' })
    assert.deepEqual(parseRateLimit(headers), { limit: 60, remaining: 0, reset: 1795305660 })
    headers.delete('x-ratelimit-reset')
    assert.equal(parseRateLimit(headers), undefined)
  })

  it('takes the cursor of the rel="next" link, among others and in any spelling', () => {
    assert.equal(nextCursor('</v1/pets?limit=3&status=sold&cursor=cDE6Mw>; rel="next"'), 'cDE6Mw')
    assert.equal(nextCursor('</v1/pets>; rel="successor-version", </v1/pets?cursor=abc>; rel=next'), 'abc')
    assert.equal(nextCursor('<https://h/v1/pets?cursor=x_y-z>; title="more"; rel="prev next"'), 'x_y-z')
    assert.equal(nextCursor('</v1/pets>; rel="successor-version"'), undefined)
    assert.equal(nextCursor(null), undefined)
  })
})
