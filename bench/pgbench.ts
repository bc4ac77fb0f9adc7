// PostgreSQL alone: pgbench driving the service's own statements (src/db/sql/pets-sql.ts),
// prepared, one per transaction, on the suite's database. What PostgreSQL itself does
// for a request's SQL is the ceiling the service is measured against there (issue 17).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { petsStatements } from '../src/db/sql/pets-sql.js'
import { runToEnd, spawnPinned } from './processes.js'

export const PGBENCH_MISSING =
  "pgbench not found: it ships with PostgreSQL's client tools, e.g. apt-get install postgresql-client; skipping the PostgreSQL-alone runs"

export type PetsStatements = ReturnType<typeof petsStatements>

/** One of the service's statements, with the values one of the bench's requests binds to it. */
export interface PgbenchStatement {
  /** Picks the statement, written with whatever placeholders `sql` was made with. */
  pick: (sql: PetsStatements) => string
  values: Array<string | number>
}

export interface PgbenchResult {
  tps: number
  latencyAverageMs: number
  p50Ms: number
  p99Ms: number
  /** Failed transactions (counted from pgbench 15 on; an error aborts older ones). */
  failed: number
}

export function hasPgbench(): boolean {
  try {
    execFileSync('pgbench', ['--version'], { stdio: 'ignore' })
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT'
  }
}

/** The statement as the service sends it (`$n` placeholders), with its values, for the report. */
export function describeStatement(statement: PgbenchStatement): { sql: string; values: string } {
  return {
    sql: statement.pick(petsStatements((n) => `$${n}`)),
    values: statement.values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v))).join(', '),
  }
}

export interface PgbenchSpec {
  databaseUrl: string
  clients: number
  durationS: number
}

/**
 * Runs `statement` for `durationS` on `core`. Its `$n` become pgbench variables
 * (`:pn`, given with -D), which prepared mode sends as bind parameters, untyped, as
 * the service's driver does. Every transaction's latency goes to a log (--log), for
 * the percentiles pgbench's summary lacks.
 */
export async function runPgbench(statement: PgbenchStatement, spec: PgbenchSpec, core: number, dir: string): Promise<PgbenchResult> {
  const script = join(dir, 'pgbench.sql')
  writeFileSync(script, `${statement.pick(petsStatements((n) => `:p${n}`))};\n`)
  const logDir = mkdtempSync(join(dir, 'pgbench-log-'))
  try {
    const args = ['-n', '-M', 'prepared', '-c', String(spec.clients), '-j', '1', '-T', String(spec.durationS), '-f', script]
    statement.values.forEach((value, i) => args.push('-D', `p${i + 1}=${value}`))
    args.push('--log', `--log-prefix=${join(logDir, 'tx')}`, spec.databaseUrl)
    const out = await runToEnd(spawnPinned(core, 'pgbench', args), (spec.durationS + 30) * 1000)
    const latencies = transactionLatenciesMs(logDir)
    return { ...summary(out), p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99) }
  } finally {
    rmSync(logDir, { recursive: true, force: true })
  }
}

function summary(out: string): Omit<PgbenchResult, 'p50Ms' | 'p99Ms'> {
  // "excluding connections establishing" before pgbench 14.
  const tps = /^tps = ([\d.]+) \((?:without initial connection time|excluding connections establishing)\)$/m.exec(out)?.[1]
  const latency = /^latency average = ([\d.]+) ms$/m.exec(out)?.[1]
  if (tps === undefined || latency === undefined) throw new Error(`pgbench printed no tps or latency: ${out}`)
  const failed = /^number of failed transactions: (\d+)/m.exec(out)?.[1]
  return { tps: Number(tps), latencyAverageMs: Number(latency), failed: Number(failed ?? 0) }
}

/**
 * Per-transaction log lines: `client_id transaction_no time script_no time_epoch time_us …`,
 * time being the latency in µs, or `failed` / `skipped` (pgbench(1), "Per-Transaction Logging").
 */
function transactionLatenciesMs(logDir: string): Float64Array {
  const latencies: number[] = []
  for (const file of readdirSync(logDir)) {
    for (const line of readFileSync(join(logDir, file), 'utf8').split('\n')) {
      const us = Number(line.split(' ', 3)[2])
      if (line && Number.isFinite(us)) latencies.push(us / 1000)
    }
  }
  return new Float64Array(latencies).sort()
}

/** Nearest rank, of sorted values. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!
}
