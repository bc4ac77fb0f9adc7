// Requests per API key, per UTC hour and per outcome: the usage history. The service
// adds to it in batches (api-keys/usage-recorder.ts), never a write per request.
// Written once for both databases: sql/usage.ts.

export const USAGE_OUTCOMES = ['ok', 'rate_limited', 'banned', 'forbidden', 'error'] as const
export type UsageOutcome = (typeof USAGE_OUTCOMES)[number]

export interface UsageRow {
  apiKeyId: number
  /** Unix ms of the start of the UTC hour. */
  hour: number
  outcome: UsageOutcome
  requests: number
}

export interface UsageStore {
  /** Adds each row's requests to the stored count of its key, hour and outcome. */
  add(rows: readonly UsageRow[]): Promise<void>
  /** A key's rows with `from <= hour < to`, by hour. */
  history(apiKeyId: number, from: number, to: number): Promise<UsageRow[]>
  /** Deletes the rows of hours before `before`. */
  purge(before: number): Promise<void>
}
