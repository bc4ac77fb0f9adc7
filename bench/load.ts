// The load generator: wrk when installed (C, so it leaves more of its core to spare),
// otherwise autocannon from npm. Either runs pinned to its own core, as a child process.
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import type { AutocannonSummary, ScenarioResult, ScenarioSpec } from './autocannon-scenario.js'
import { runToEnd, spawnPinned } from './processes.js'
import { wrkScript, type Scenario } from './scenarios.js'

export type Generator = 'wrk' | 'autocannon'

export interface LoadSpec {
  /** The URL loaded; for a scenario, the service's origin (the scenario gives the paths). */
  url: string
  method: 'GET' | 'POST'
  headers: Record<string, string>
  body?: string
  connections: number
  durationS: number
  /** Requests that differ from one to the next (bench/scenarios.ts), instead of one repeated. */
  scenario?: Scenario
  /** Count the 503s apart (wrk only): writes paced while webhooks fall behind (--webhook; src/webhooks/write-pacing.ts). */
  countPaced?: boolean
}

export interface LoadResult {
  requestsPerS: number
  p50Ms: number
  p99Ms: number
  /** Responses with a status outside 2xx (a refused request is not a served one). */
  non2xx: number
  /** Connection errors and timeouts. */
  errors: number
  /** Of `non2xx`, the 503s, when the spec asked (`countPaced`). */
  paced?: number
  /** A scenario's pets reserved (sent, whatever the answer): the order pool they used up. */
  petsReserved?: number
  /** A mixed scenario's 2xx list answers per second, over the same duration as requestsPerS. */
  listRequestsPerS?: number
  /** CPU time the serving process used per request, in microseconds (bench/processes.ts cpuSeconds). */
  cpuUsPerRequest?: number
}

export function detectGenerator(): Generator {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' })
    return 'wrk'
  } catch (error) {
    // wrk --version prints its banner and exits 1; only a missing binary is ENOENT.
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'autocannon' : 'wrk'
  }
}

export async function runLoad(generator: Generator, spec: LoadSpec, core: number, dir: string): Promise<LoadResult> {
  const timeoutMs = (spec.durationS + 30) * 1000
  return generator === 'wrk' ? runWrk(spec, core, dir, timeoutMs) : runAutocannon(spec, core, dir, timeoutMs)
}

// wrk's `done` hook prints the numbers as one JSON line; latencies are in microseconds.
// A scenario's script defines scenario_counts() (bench/scenarios.ts).
const WRK_DONE = `
done = function(summary, latency, requests)
  local e = summary.errors
  local reserved, listed, paced = 0, 0, 0
  if scenario_counts then reserved, listed = scenario_counts() end
  if paced_count then paced = paced_count() end
  io.write(string.format('WRK_RESULT {"requests":%d,"durationUs":%d,"non2xx":%d,"errors":%d,"p50Us":%d,"p99Us":%d,"reserved":%d,"listed":%d,"paced":%d}\\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), reserved, listed, paced))
end
`

// Counts the 503s, beside a scenario's own hooks: defining \`response\` makes wrk hand
// every answer to Lua, so only runs that ask for it pay for it.
const WRK_PACED = `
paced = 0
local paced_threads = {}
local scenario_setup = setup
setup = function(thread)
  table.insert(paced_threads, thread)
  if scenario_setup then scenario_setup(thread) end
end
local scenario_response = response
response = function(status, headers, body)
  if status == 503 then paced = paced + 1 end
  if scenario_response then scenario_response(status, headers, body) end
end
function paced_count()
  local n = 0
  for _, thread in ipairs(paced_threads) do n = n + thread:get('paced') end
  return n
end
`

async function runWrk(spec: LoadSpec, core: number, dir: string, timeoutMs: number): Promise<LoadResult> {
  let lua: string[]
  if (spec.scenario) lua = [wrkScript(spec.scenario, spec.headers)]
  else {
    lua = [`wrk.method = ${luaString(spec.method)}`]
    if (spec.body !== undefined) lua.push(`wrk.body = ${luaString(spec.body)}`)
    for (const [name, value] of Object.entries(spec.headers)) lua.push(`wrk.headers[${luaString(name)}] = ${luaString(value)}`)
  }
  const script = join(dir, `load-${spec.scenario?.kind ?? spec.method.toLowerCase()}.lua`)
  if (spec.countPaced) lua.push(WRK_PACED)
  writeFileSync(script, lua.join('\n') + WRK_DONE)
  const args = ['-t1', `-c${spec.connections}`, `-d${spec.durationS}s`, '--timeout', '10s', '-s', script, spec.url]
  const out = await runToEnd(spawnPinned(core, 'wrk', args), timeoutMs)
  const json = /^WRK_RESULT (.*)$/m.exec(out)?.[1]
  if (!json) throw new Error(`wrk printed no result: ${out}`)
  const r = JSON.parse(json) as {
    requests: number
    durationUs: number
    non2xx: number
    errors: number
    p50Us: number
    p99Us: number
    reserved: number
    listed: number
    paced: number
  }
  const seconds = r.durationUs / 1e6
  return {
    requestsPerS: r.requests / seconds,
    p50Ms: r.p50Us / 1000,
    p99Ms: r.p99Us / 1000,
    non2xx: r.non2xx,
    errors: r.errors,
    ...(spec.countPaced ? { paced: r.paced } : {}),
    ...scenarioFigures(spec.scenario, r.reserved, r.listed, seconds),
  }
}

function scenarioFigures(scenario: Scenario | undefined, reserved: number, listed: number, seconds: number): Partial<LoadResult> {
  if (!scenario) return {}
  return { petsReserved: reserved, ...(scenario.kind === 'mixed' ? { listRequestsPerS: listed / seconds } : {}) }
}

const luaString = (value: string) => JSON.stringify(value) // a JSON string literal is a valid Lua one for ASCII

async function runAutocannon(spec: LoadSpec, core: number, dir: string, timeoutMs: number): Promise<LoadResult> {
  if (spec.scenario) return runAutocannonScenario(spec, spec.scenario, core, dir, timeoutMs)
  const cli = createRequire(import.meta.url).resolve('autocannon/autocannon.js')
  const args = [cli, '--json', '-c', String(spec.connections), '-d', String(spec.durationS), '-m', spec.method]
  for (const [name, value] of Object.entries(spec.headers)) args.push('-H', `${name}=${value}`)
  if (spec.body !== undefined) args.push('-b', spec.body)
  args.push(spec.url)
  const out = await runToEnd(spawnPinned(core, process.execPath, args), timeoutMs)
  return fromAutocannon(JSON.parse(out.trim().split('\n').pop()!) as AutocannonSummary)
}

/** autocannon's summary (its --json line, or what its API resolves with) as a LoadResult. */
function fromAutocannon(r: AutocannonSummary): LoadResult {
  return {
    requestsPerS: r.requests.total / r.duration,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  }
}

/** A scenario needs autocannon's requests array, so its programmatic API, in a process of its own. */
async function runAutocannonScenario(spec: LoadSpec, scenario: Scenario, core: number, dir: string, timeoutMs: number): Promise<LoadResult> {
  const file = join(dir, `load-${scenario.kind}.json`)
  const scenarioSpec: ScenarioSpec = { url: spec.url, headers: spec.headers, connections: spec.connections, durationS: spec.durationS, scenario }
  writeFileSync(file, JSON.stringify(scenarioSpec))
  const out = await runToEnd(spawnPinned(core, process.execPath, ['--import', 'tsx', 'bench/autocannon-scenario.ts', file]), timeoutMs)
  const r = JSON.parse(out.trim().split('\n').pop()!) as ScenarioResult
  return { ...fromAutocannon(r), ...scenarioFigures(scenario, r.counts.reserved, r.counts.listed, r.duration) }
}
