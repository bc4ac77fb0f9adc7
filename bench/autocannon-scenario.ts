// A scripted scenario (bench/scenarios.ts) under autocannon's programmatic API,
// in a process of its own, pinned by the harness like the autocannon command line.
// Prints one JSON line: autocannon's result, with the scenario's counts.
// Usage: node --import tsx bench/autocannon-scenario.ts SPEC.json
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cannonSteps, type Scenario, type ScenarioCounts } from './scenarios.js'

export interface ScenarioSpec {
  /** The service's origin: http://127.0.0.1:PORT */
  url: string
  headers: Record<string, string>
  connections: number
  durationS: number
  scenario: Scenario
}

/** The parts of autocannon's summary the bench reads (bench/load.ts). */
export interface AutocannonSummary {
  requests: { total: number }
  duration: number
  latency: { p50: number; p99: number }
  non2xx: number
  errors: number
  timeouts: number
}

export interface ScenarioResult extends AutocannonSummary {
  counts: ScenarioCounts
}

type Autocannon = (options: Record<string, unknown>) => Promise<AutocannonSummary>

const file = process.argv[2]
if (!file) throw new Error('usage: autocannon-scenario.ts SPEC.json')
const spec = JSON.parse(readFileSync(file, 'utf8')) as ScenarioSpec
// autocannon ships no types; only the call above is used.
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon
const counts: ScenarioCounts = { reserved: 0, listed: 0 }
const result = await autocannon({
  url: spec.url,
  connections: spec.connections,
  duration: spec.durationS,
  headers: spec.headers,
  requests: cannonSteps(spec.scenario, spec.headers, counts),
})
console.log(JSON.stringify({ ...result, counts } satisfies ScenarioResult))
