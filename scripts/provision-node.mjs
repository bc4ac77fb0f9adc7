// Provides the Node.js lines this project supports, from the npm registry's
// node-linux-<arch> packages (the official binaries, with the headers for native
// builds), cached under ~/.cache/petstore/node so each version is fetched once.
//
//   node scripts/provision-node.mjs 26        prints the folder of Node 26 (the version
//                                             pinned in node-versions.json), fetching it
//                                             if needed; bin/node and include/node inside
//   node scripts/provision-node.mjs --for-npm-scripts
//                                             run by `npm ci` / `npm install` (preprepare):
//                                             on an unsupported Node, links the default
//                                             line's node into node_modules/.bin, so that
//                                             every npm script (start, test, build, npx
//                                             petstore) runs on it; on a supported Node,
//                                             removes such a link
//
// Plain JavaScript that old Node versions can run: on them it must explain itself.
import { execFileSync } from 'node:child_process'
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, unlinkSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const { default: defaultVersion, lines } = JSON.parse(readFileSync(join(root, 'scripts', 'node-versions.json'), 'utf8'))
const engines = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).engines.node
const cacheRoot = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'petstore', 'node')

/** The pinned version of a line ("26" → "26.10.0"). */
export function pinnedVersion(line) {
  const version = lines.find((v) => v.split('.')[0] === String(line))
  if (!version) throw new Error(`no Node ${line} in scripts/node-versions.json (lines: ${lines.join(', ')})`)
  return version
}

/** The folder of that Node version (bin/node, include/node), fetched into the cache if absent. */
export function provide(version) {
  if (process.platform !== 'linux' || !['x64', 'arm64'].includes(process.arch)) {
    throw new Error(`no Node.js package on the npm registry for ${process.platform}-${process.arch}: install Node.js ${version.split('.')[0]} yourself`)
  }
  const pkg = `node-linux-${process.arch}`
  const dir = join(cacheRoot, `${pkg}-${version}`)
  if (!isNode(dir, version)) {
    mkdirSync(cacheRoot, { recursive: true })
    const tmp = mkdtempSync(join(cacheRoot, '.fetch-'))
    try {
      // npm pack checks the tarball against the registry's integrity hash.
      const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm']
      const packed = execFileSync(npm[0], [...npm.slice(1), 'pack', `${pkg}@${version}`, '--pack-destination', tmp, '--json', '--silent'], {
        cwd: tmp,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      })
      execFileSync('tar', ['-xzf', join(tmp, JSON.parse(packed)[0].filename), '-C', tmp], { stdio: 'inherit' })
      if (!isNode(join(tmp, 'package'), version)) throw new Error(`${pkg}@${version} holds no working bin/node`)
      rmSync(dir, { recursive: true, force: true })
      renameSync(join(tmp, 'package'), dir)
    } finally {
      rmSync(tmp, { recursive: true, force: true })
    }
  }
  return dir
}

function isNode(dir, version) {
  try {
    return existsSync(join(dir, 'include', 'node', 'node.h')) && execFileSync(join(dir, 'bin', 'node'), ['--version'], { encoding: 'utf8' }).trim() === `v${version}`
  } catch {
    return false
  }
}

/** True when `version` satisfies `range`, for the forms package.json's engines uses: `^A.B.C` and `>=A.B.C`, joined by `||`. */
export function satisfies(version, range) {
  const v = version.split('.').map(Number)
  return range.split('||').some((part) => {
    const m = /^\s*(\^|>=)\s*(\d+)\.(\d+)\.(\d+)\s*$/.exec(part)
    if (!m) throw new Error(`engines range not understood: ${part.trim()}`)
    const floor = [Number(m[2]), Number(m[3]), Number(m[4])]
    if (m[1] === '^' && v[0] !== floor[0]) return false
    for (let i = 0; i < 3; i++) if (v[i] !== floor[i]) return v[i] > floor[i]
    return true
  })
}

function forNpmScripts() {
  const link = join(root, 'node_modules', '.bin', 'node')
  if (satisfies(process.versions.node, engines)) {
    // A link left by an earlier install on an unsupported Node: this Node is the one to use now.
    if (isSymlink(link) && readlinkSync(link).startsWith(cacheRoot)) unlinkSync(link)
    return
  }
  const unsupported = `Node.js ${process.version} is not supported (package.json engines: ${engines})`
  let dir
  try {
    dir = provide(defaultVersion)
  } catch (error) {
    throw new Error(`${unsupported}, and none could be provided: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
  }
  if (isSymlink(link)) unlinkSync(link)
  mkdirSync(dirname(link), { recursive: true })
  symlinkSync(join(dir, 'bin', 'node'), link)
  console.error(
    `\npetstore: ${unsupported}.\n` +
      `petstore: npm scripts in this folder (npm start, npm test, npx petstore …) will run on Node.js v${defaultVersion},\n` +
      `petstore: fetched from the npm registry into ${dir}; the EBADENGINE warnings above are about ${process.version}.\n` +
      `petstore: To run on your own Node.js instead, install 22.13 or later, 24 or 26, and run npm ci again.\n`,
  )
}

function isSymlink(path) {
  try {
    return lstatSync(path).isSymbolicLink()
  } catch {
    return false
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = process.argv[2]
  try {
    if (arg === '--for-npm-scripts') forNpmScripts()
    else if (arg && /^\d+$/.test(arg)) console.log(provide(pinnedVersion(arg)))
    else if (arg === '--lines') console.log(lines.map((v) => v.split('.')[0]).join(' '))
    else if (arg === '--default') console.log(defaultVersion)
    else {
      console.error('usage: node scripts/provision-node.mjs LINE | --lines | --default | --for-npm-scripts')
      process.exitCode = 2
    }
  } catch (error) {
    console.error(`petstore: ${error instanceof Error ? error.message : String(error)}`)
    process.exitCode = 1
  }
}
