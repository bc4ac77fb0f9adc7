// `petstore/client` types resolve under every moduleResolution a TypeScript project
// may use: node16/nodenext and bundler read package.json `exports`; the older
// "node" (node10) reads `typesVersions` instead (issue 12).
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const ROOT = resolve(import.meta.dirname, '..')

describe('petstore/client types under each moduleResolution', { concurrency: true }, () => {
  let project: string
  before(() => {
    assert.ok(existsSync(join(ROOT, 'dist/client/index.d.ts')), 'dist/ is not built: run `npm run build` (npm test does) first')
    project = mkdtempSync(join(tmpdir(), 'petstore-resolution-'))
    mkdirSync(join(project, 'node_modules'))
    symlinkSync(ROOT, join(project, 'node_modules', 'petstore'), 'dir')
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }))
    writeFileSync(
      join(project, 'consumer.ts'),
      `import type { Pet, PetStatus } from 'petstore/client'
const status: PetStatus = 'sold'
const pet: Pet = { id: 1, name: 'Rex', categoryId: 1, status }
// @ts-expect-error pet ids are numbers: this line proves the types were found, not any
const wrong: Pet = { id: '1', name: 'Rex', categoryId: 1, status }
export { pet, wrong }
`,
    )
  })
  after(() => rmSync(project, { recursive: true, force: true }))

  const settings: Record<string, Record<string, string>> = {
    node: { module: 'commonjs', moduleResolution: 'node', ignoreDeprecations: '6.0' },
    node16: { module: 'node16', moduleResolution: 'node16' },
    bundler: { module: 'esnext', moduleResolution: 'bundler' },
  }
  for (const [name, options] of Object.entries(settings)) {
    it(`type-checks with moduleResolution ${name}`, async () => {
      const config = join(project, `tsconfig.${name}.json`)
      writeFileSync(config, JSON.stringify({ compilerOptions: { ...options, target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: [] }, files: ['consumer.ts'] }))
      const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
      const result = await run(process.execPath, [tsc, '-p', config], { cwd: project }).catch((error: { stdout: string; code: number }) => error)
      assert.equal('code' in result ? result.code : 0, 0, 'stdout' in result ? result.stdout : '')
    })
  }
})
