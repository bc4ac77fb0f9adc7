// `npm start`'s build step: compiles src/ into dist/ (and console/ into dist/console/)
// only when dist/ is older than a source (or missing), and never twice at once: two instances started together take
// turns on a lock, and the second finds dist/ current once the first has built it.
// Usage: node scripts/build-if-stale.mjs [--root DIR]
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const rootArg = process.argv.indexOf('--root')
const root = rootArg === -1 ? dirname(dirname(fileURLToPath(import.meta.url))) : process.argv[rootArg + 1]
const LOCK = join(root, '.dist-build.lock')
const STALE_LOCK_MS = 120_000
const WAIT_MS = 180_000

/** Every file below `dir`, as paths. */
function filesBelow(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name))
}

/** Why dist/ must be built, or undefined when it is current: each source older than its compiled file. */
function staleness() {
  const inputs = [join(root, 'tsconfig.json'), join(root, 'tsconfig.build.json'), join(root, 'package-lock.json')]
  let sources
  try {
    sources = filesBelow(join(root, 'src')).filter((file) => file.endsWith('.ts'))
  } catch {
    return 'no src/'
  }
  const newestInput = Math.max(...[...inputs, ...sources].map((file) => statSync(file).mtimeMs))
  for (const source of sources) {
    const compiled = join(root, 'dist', relative(join(root, 'src'), source).replace(/\.ts$/, '.js'))
    let built
    try {
      built = statSync(compiled).mtimeMs
    } catch {
      return `${relative(root, compiled)} is missing`
    }
    // tsc writes every file of a build: each must postdate every input.
    if (built < newestInput) return `${relative(root, compiled)} is older than the sources`
  }
  return consoleStaleness()
}

/** Why dist/console/ (the web console, built by Vite) must be built, or undefined when it is current. */
function consoleStaleness() {
  let sources
  try {
    sources = filesBelow(join(root, 'console'))
  } catch {
    return undefined // a copy without the console's sources serves none
  }
  const page = join(root, 'dist', 'console', 'index.html')
  let built
  try {
    built = statSync(page).mtimeMs
  } catch {
    return `${relative(root, page)} is missing`
  }
  const newest = Math.max(...[join(root, 'package-lock.json'), ...sources].map((file) => statSync(file).mtimeMs))
  return built < newest ? `${relative(root, page)} is older than the console's sources` : undefined
}

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

/** Takes the lock (a directory: mkdir is atomic), waiting for another build to end; a lock older than STALE_LOCK_MS is a crashed build's. */
function lock() {
  const deadline = Date.now() + WAIT_MS
  let said = false
  for (;;) {
    try {
      mkdirSync(LOCK)
      return
    } catch (error) {
      if (error.code !== 'EEXIST') throw error
    }
    try {
      if (Date.now() - statSync(LOCK).mtimeMs > STALE_LOCK_MS) {
        rmSync(LOCK, { recursive: true, force: true })
        continue
      }
    } catch {
      continue // released meanwhile
    }
    if (Date.now() > deadline) throw new Error(`another build has held ${relative(process.cwd(), LOCK)} for over ${WAIT_MS / 1000} s`)
    if (!said) console.error('petstore: waiting for another build of dist/ to finish')
    said = true
    sleep(200)
  }
}

if (staleness() === undefined) {
  console.error('petstore: dist/ is current, not rebuilding')
} else {
  lock()
  try {
    // Maybe built by the one we waited for.
    const why = staleness()
    if (why === undefined) console.error('petstore: dist/ was built meanwhile')
    else {
      console.error(`petstore: building dist/ (${why})`)
      // `npm run build`'s two steps: the server (tsc), then the console (Vite).
      const resolve = createRequire(join(root, 'package.json')).resolve
      const tsc = spawnSync(process.execPath, [resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' })
      if (tsc.status !== 0) process.exit(tsc.status ?? 1)
      const viteConfig = join(root, 'console', 'vite.config.ts')
      if (existsSync(viteConfig)) {
        const vite = join(dirname(resolve('vite/package.json')), 'bin', 'vite.js')
        const built = spawnSync(process.execPath, [vite, 'build', '--config', viteConfig, '--logLevel', 'warn'], { cwd: root, stdio: 'inherit' })
        if (built.status !== 0) process.exit(built.status ?? 1)
      }
    }
  } finally {
    rmSync(LOCK, { recursive: true, force: true })
  }
}
