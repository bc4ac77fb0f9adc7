// Summarises a V8 .cpuprofile (from `npm run bench -- --cpu-prof DIR`): where the
// process spent its own (self) time, by function and by package or source file.
// Usage: node --import tsx bench/profile-summary.ts FILE.cpuprofile [TOP]
import { readFileSync } from 'node:fs'

interface ProfileNode {
  id: number
  children?: number[]
  callFrame: { functionName: string; url: string; lineNumber: number }
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const [file, top = '25'] = process.argv.slice(2)
if (!file) throw new Error('usage: profile-summary.ts FILE.cpuprofile [TOP]')
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile

// Self time of each node: the time delta that follows each sample lands on the sampled node.
const selfUs = new Map<number, number>()
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0)))

/** node_modules/<package>, the project's own file, node:… internals, or V8's pseudo-frames. */
function area(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)'
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1]
  if (pkg) return pkg
  if (url.startsWith('node:')) return url.replace(/^(node:internal\/[^/]+).*$/, '$1')
  return url.replace(/^.*\/(dist|src|bench)\//, '$1/')
}

const byFunction = new Map<string, number>()
const byArea = new Map<string, number>()
let busy = 0
for (const node of profile.nodes) {
  const us = selfUs.get(node.id) ?? 0
  const { functionName, url, lineNumber } = node.callFrame
  if (functionName === '(idle)') continue
  busy += us
  const where = area(url, functionName)
  const fn = `${functionName || '(anonymous)'}  ${where}${url ? `:${lineNumber + 1}` : ''}`
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us)
  byArea.set(where, (byArea.get(where) ?? 0) + us)
}

// Inclusive time of the project's own functions (self plus callees), counted once per sample.
// A stack ends at an await: what runs after a handler's first await (a query's continuation)
// is not counted under the handler. Trust self time for async code.
const parent = new Map<number, number>()
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
const inclusive = new Map<string, number>()
profile.samples.forEach((id, i) => {
  const seen = new Set<string>()
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const { functionName, url, lineNumber } = nodes.get(at)!.callFrame
    if (!/\/(dist|src)\//.test(url) || url.includes('node_modules')) continue
    const fn = `${functionName || '(anonymous)'}  ${area(url, functionName)}:${lineNumber + 1}`
    if (!seen.has(fn)) inclusive.set(fn, (inclusive.get(fn) ?? 0) + (profile.timeDeltas[i + 1] ?? 0))
    seen.add(fn)
  }
})

function print(title: string, totals: Map<string, number>) {
  console.log(`\n${title} (share of non-idle time, ${(busy / 1e6).toFixed(1)} s)`)
  for (const [name, us] of [...totals].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) {
    console.log(`${((100 * us) / busy).toFixed(1).padStart(5)}%  ${name}`)
  }
}
print('Self time by package or file', byArea)
print('Self time by function', byFunction)
print("Inclusive time of the project's own functions", inclusive)
