// The Node.js versions the service runs on are package.json's engines (tested by
// .ci/run on each line in scripts/node-versions.json). On any other version the
// entry points stop with this message instead of failing later in a dependency.
import { readFileSync } from 'node:fs'

/** True when `version` satisfies `range`, in the forms engines uses: `^A.B.C` and `>=A.B.C`, joined by `||`. */
export function satisfies(version: string, range: string): boolean {
  const v = version.split('.').map(Number)
  return range.split('||').some((part) => {
    const match = /^\s*(\^|>=)\s*(\d+)\.(\d+)\.(\d+)\s*$/.exec(part)
    if (!match) throw new Error(`engines range not understood: ${part.trim()}`)
    const floor = [Number(match[2]), Number(match[3]), Number(match[4])]
    if (match[1] === '^' && v[0] !== floor[0]) return false
    for (let i = 0; i < 3; i++) if (v[i] !== floor[i]) return (v[i] ?? 0) > (floor[i] ?? 0)
    return true
  })
}

/** package.json's engines.node; src/ and dist/ both sit one level below it. */
export function supportedNodeRange(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }
  return pkg.engines.node
}

/** Undefined on a supported Node; otherwise what to tell the user. */
export function unsupportedNodeMessage(version: string = process.versions.node, range: string = supportedNodeRange()): string | undefined {
  if (satisfies(version, range)) return undefined
  return (
    `Node.js v${version} is not supported: petstore runs on Node.js ${range} (22.13 or later, 24, 26). ` +
    'Install one of those, or run it through npm (npm start, npx petstore): after `npm ci` on an unsupported Node, npm scripts use a supported Node fetched from the npm registry.'
  )
}
