// Overview: the account, the key and its scopes; this minute and today against the
// plan's limits; the last 7 days by hour and outcome (GET /v1/usage/history).
import { useEffect, useRef, useState } from 'preact/hooks'
import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import type { Usage, UsageBucket } from '../api.js'
import { ErrorNote, formatTime, NeedsScope, useSession } from '../ui.js'

const OUTCOMES = [
  { name: 'ok', color: '#1a7f37' },
  { name: 'rate_limited', label: 'rate limited', color: '#bf8700' },
  { name: 'banned', color: '#8250df' },
  { name: 'forbidden', color: '#cf222e' },
  { name: 'error', color: '#57606a' },
] as const

const HOUR = 3_600_000

export function Overview() {
  const { account, scopes } = useSession()
  const key = account.callingKey
  return (
    <>
      <section aria-labelledby="account">
        <h2 id="account">Account</h2>
        <dl>
          <dt>Account</dt>
          <dd>
            {account.name} (id {account.id}, {account.status})
          </dd>
          <dt>Plan</dt>
          <dd data-testid="plan">
            {account.plan}: {account.limits.perMinute} requests a minute, {account.limits.perDay} a day
          </dd>
          <dt>This key</dt>
          <dd data-testid="this-key">{`${key.name} (id ${key.id}, ${key.prefix}…), ${key.expiresAt === null ? 'never expires' : `expires ${formatTime(key.expiresAt)}`}`}</dd>
          <dt>Scopes</dt>
          <dd data-testid="scopes">{scopes.join(', ') || 'none'}</dd>
        </dl>
      </section>
      <UsageNow />
      <NeedsScope operation="getUsageHistory">
        <UsageChart />
      </NeedsScope>
    </>
  )
}

function UsageNow() {
  const { api } = useSession()
  const [usage, setUsage] = useState<Usage>()
  const [error, setError] = useState<unknown>()
  useEffect(() => {
    api.getUsage().then(setUsage, setError)
  }, [])
  return (
    <section aria-labelledby="usage">
      <h2 id="usage">Usage</h2>
      <ErrorNote error={error} />
      {usage?.bannedUntil && (
        <p class="error" role="alert">
          This key is banned until {formatTime(usage.bannedUntil)}.
        </p>
      )}
      {usage && (
        <dl class="figures">
          <div>
            <dt>This minute</dt>
            <dd data-testid="usage-minute">
              {usage.minute.used} of {usage.minute.limit}
            </dd>
          </div>
          <div>
            <dt>Today (UTC)</dt>
            <dd data-testid="usage-day">
              {usage.day.used} of {usage.day.limit}
            </dd>
          </div>
        </dl>
      )}
    </section>
  )
}

/** The 7 days' buckets as uPlot's columns: every hour (those without requests are 0), then each outcome. */
export function chartColumns(buckets: UsageBucket[], from: number, to: number): number[][] {
  const byHour = new Map(buckets.map((bucket) => [Date.parse(bucket.start), bucket]))
  const hours: number[] = []
  for (let hour = from; hour < to; hour += HOUR) hours.push(hour)
  return [hours.map((hour) => hour / 1000), ...OUTCOMES.map(({ name }) => hours.map((hour) => byHour.get(hour)?.[name] ?? 0))]
}

function UsageChart() {
  const { api } = useSession()
  const [buckets, setBuckets] = useState<UsageBucket[]>()
  const [error, setError] = useState<unknown>()
  const chart = useRef<HTMLDivElement>(null)
  // Whole hours, up to and including the current one.
  const to = Math.floor(Date.now() / HOUR) * HOUR + HOUR
  const from = to - 7 * 24 * HOUR
  useEffect(() => {
    api.getUsageHistory(new Date(from), new Date(to)).then(setBuckets, setError)
  }, [])
  useEffect(() => {
    if (buckets === undefined || chart.current === null) return
    const plot = new uPlot(
      {
        width: Math.min(1000, chart.current.clientWidth || 800),
        height: 260,
        series: [{}, ...OUTCOMES.map(({ name, color, ...rest }) => ({ label: 'label' in rest ? rest.label : name, stroke: color, width: 2 }))],
        axes: [{}, { label: 'requests per hour' }],
      },
      chartColumns(buckets, from, to) as uPlot.AlignedData,
      chart.current,
    )
    return () => plot.destroy()
  }, [buckets])
  const total = (name: (typeof OUTCOMES)[number]['name']) => buckets?.reduce((sum, bucket) => sum + bucket[name], 0) ?? 0
  return (
    <section aria-labelledby="history">
      <h2 id="history">The last 7 days, by hour</h2>
      <ErrorNote error={error} />
      <div ref={chart} role="img" aria-label="Requests per hour over the last 7 days, one line per outcome" />
      {buckets && (
        <table>
          <caption>Totals over the 7 days</caption>
          <thead>
            <tr>
              {OUTCOMES.map((outcome) => (
                <th scope="col" key={outcome.name}>
                  {'label' in outcome ? outcome.label : outcome.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            <tr>
              {OUTCOMES.map((outcome) => (
                <td key={outcome.name} data-testid={`total-${outcome.name}`}>
                  {total(outcome.name)}
                </td>
              ))}
            </tr>
          </tbody>
        </table>
      )}
    </section>
  )
}
