// A throwaway project that has `petstore` installed (a symlink in its node_modules),
// as a user's project would: how the built client looks from outside the repository.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'

export const ROOT = resolve(import.meta.dirname, '../..')
export const run = promisify(execFile)

export interface ConsumerProject {
  dir: string
  /** Writes `source` as consumer.ts and type-checks it with our tsc, strict, as a NodeNext project; fails the test with tsc's output. */
  typeCheck(source: string): Promise<void>
  remove(): void
}

export function createConsumerProject(): ConsumerProject {
  // `npm test` builds dist/ first; run alone, a test file using this needs `npm run build` before it.
  assert.ok(existsSync(join(ROOT, 'dist/client/index.d.ts')), 'dist/ is not built: run `npm run build` (npm test does) before this file')
  const dir = mkdtempSync(join(tmpdir(), 'petstore-consumer-'))
  mkdirSync(join(dir, 'node_modules'))
  symlinkSync(ROOT, join(dir, 'node_modules', 'petstore'), 'dir')
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }))
  return {
    dir,
    async typeCheck(source) {
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            target: 'ES2023',
            strict: true,
            noEmit: true,
            // As most projects do: checking every .d.ts of @types/node and typebox takes ~50 s.
            // Our own .d.ts files were checked when tsc emitted them from src/.
            skipLibCheck: true,
            types: ['node'],
            typeRoots: [join(ROOT, 'node_modules/@types')],
          },
          files: ['consumer.ts'],
        }),
      )
      writeFileSync(join(dir, 'consumer.ts'), source)
      const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
      const result = await run(process.execPath, [tsc, '-p', dir], { cwd: dir }).catch((error: { stdout: string; code: number }) => error)
      assert.equal('code' in result ? result.code : 0, 0, 'stdout' in result ? result.stdout : '')
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}
