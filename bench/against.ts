// `--against REV`: another revision of the service, built in a temporary git worktree,
// to be measured in the same run as this checkout (before/after a change, on the same
// machine at the same moment: the only comparison that noise on a shared machine allows).
import { execFile } from 'node:child_process'
import { existsSync, readFileSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface Checkout {
  /** The revision as given, and the commit it names. */
  rev: string
  commit: string
  dir: string
  remove(): Promise<void>
}

/**
 * Checks `rev` out into `dir`, and builds its dist/ with its own sources. node_modules
 * is this checkout's when both have the same package-lock.json; otherwise `npm ci`
 * installs the revision's own (slower, and it needs the registry).
 */
export async function checkOut(rev: string, dir: string, log: (message: string) => void): Promise<Checkout> {
  const commit = (await run('git', ['rev-parse', '--verify', `${rev}^{commit}`])).stdout.trim()
  await run('git', ['worktree', 'add', '--detach', dir, commit])
  const remove = async () => {
    await run('git', ['worktree', 'remove', '--force', dir]).catch(() => run('git', ['worktree', 'prune']))
  }
  try {
    const sameLock = readFileSync('package-lock.json', 'utf8') === readFileSync(join(dir, 'package-lock.json'), 'utf8')
    if (sameLock && existsSync('node_modules')) symlinkSync(join(process.cwd(), 'node_modules'), join(dir, 'node_modules'), 'dir')
    else {
      log(`--against ${rev}: its package-lock.json differs, running npm ci there`)
      await run('npm', ['ci', '--ignore-scripts'], { cwd: dir, maxBuffer: 64 * 2 ** 20 })
    }
    await run(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.build.json')], { cwd: dir, maxBuffer: 64 * 2 ** 20 })
  } catch (error) {
    await remove()
    throw error
  }
  return { rev, commit, dir, remove }
}
