// `npm start` builds dist/ only when it is stale, and two starts at once build it once:
// scripts/build-if-stale.mjs on a copy of the project's sources, with the real tsc.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync, statSync, symlinkSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const ROOT = resolve(import.meta.dirname, '..')

describe('npm start: build only when stale, one build at a time', () => {
  let dir: string
  const build = async () => (await run(process.execPath, [join(ROOT, 'scripts/build-if-stale.mjs'), '--root', dir])).stderr
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-build-'))
    for (const file of ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json']) cpSync(join(ROOT, file), join(dir, file), { recursive: true })
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('builds a missing dist/, then leaves a current one alone', async () => {
    assert.match(await build(), /building dist\/ \(dist\/.* is missing\)/)
    const built = statSync(join(dir, 'dist/app.js')).mtimeMs
    assert.match(await build(), /dist\/ is current, not rebuilding/)
    assert.equal(statSync(join(dir, 'dist/app.js')).mtimeMs, built, 'not written again')
  })

  it('rebuilds once when a source changes, however many starts ask at once', async () => {
    const touched = new Date()
    utimesSync(join(dir, 'src/clock.ts'), touched, touched)
    const outputs = await Promise.all([build(), build(), build()])
    assert.equal(outputs.filter((out) => /building dist\//.test(out)).length, 1, outputs.join('\n---\n'))
    for (const out of outputs.filter((o) => !/building/.test(o))) assert.match(out, /built meanwhile|is current/)
    assert.ok(statSync(join(dir, 'dist/clock.js')).mtimeMs >= touched.getTime(), 'built after the change')
    assert.throws(() => statSync(join(dir, '.dist-build.lock')), /ENOENT/, 'the lock is released')
  })
})
