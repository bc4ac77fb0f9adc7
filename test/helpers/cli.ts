// The command line run in this process, as the CLI tests drive it.
import { main } from '../../src/cli/main.js'

/** Runs `petstore argv…`, collecting what it prints, a line per entry. */
export async function runCli(argv: string[], env: Record<string, string>) {
  const out: string[] = []
  const err: string[] = []
  const code = await main(argv, { out: (l) => out.push(...l.split('\n')), err: (l) => err.push(l) }, env)
  return { code, out, err, json: <T = unknown>() => JSON.parse(out.join('\n')) as T }
}
