// PETSTORE_WORKERS: the primary's own log lines are JSON like the workers' request
// lines, so a log shipper reading stdout sees one format (issue 12).
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { needs, REDIS_URL, uniqueRedisPrefix } from './helpers/services.js'

const withRedis = await needs('redis', 'the PETSTORE_WORKERS log test')

describe('PETSTORE_WORKERS=2', { skip: !withRedis }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-cluster-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('logs a worker restart as a JSON line among the others, and nothing as plain text', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: {
        ...process.env,
        PORT: '0',
        LOG_LEVEL: 'info',
        PETSTORE_WORKERS: '2',
        REDIS_URL,
        PETSTORE_REDIS_PREFIX: uniqueRedisPrefix(),
        DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const exited = new Promise((resolve) => child.once('exit', resolve))
    const lines: string[] = []
    const stderr: string[] = []
    createInterface({ input: child.stderr! }).on('line', (line) => stderr.push(line))
    let changed = () => {}
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line)
      changed()
    })
    /** Resolves once `count` lines pass `test`; fails after 20 s with what was printed. */
    const until = (count: number, test: (line: string) => boolean) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out; stdout:\n${lines.join('\n')}\nstderr:\n${stderr.join('\n')}`)), 20_000)
        changed = () => {
          if (lines.filter(test).length < count) return
          clearTimeout(timer)
          resolve()
        }
        changed()
      })
    const listening = (line: string) => line.includes('listening at')
    try {
      await until(2, listening)
      const workerPid = (JSON.parse(lines.find(listening)!) as { pid: number }).pid
      process.kill(workerPid, 'SIGKILL')
      await until(3, listening)
    } finally {
      child.kill('SIGTERM')
      await exited
    }
    const entries = lines.map((line) => {
      try {
        return JSON.parse(line) as { level: number; msg: string; pid: number }
      } catch {
        assert.fail(`a line that is not JSON: ${line}`)
      }
    })
    const restart = entries.find((entry) => /exited .*starting another/.test(entry.msg))
    assert.ok(restart, lines.join('\n'))
    assert.equal(restart.level, 50)
    assert.equal(restart.pid, child.pid)
    assert.deepEqual(stderr, [])
  })
})
