// PETSTORE_WORKERS: the primary's own log lines are JSON like the workers' request
// lines, so a log shipper reading stdout sees one format (issue 12).
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createServer, type AddressInfo } from 'node:net'
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

  it('backs off when workers cannot start, then exits 1 saying so instead of crash-looping', async () => {
    // The port is taken: every worker fails to listen as soon as it starts.
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as AddressInfo).port
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
        env: {
          ...process.env,
          PORT: String(port),
          LOG_LEVEL: 'info',
          PETSTORE_WORKERS: '2',
          REDIS_URL,
          PETSTORE_REDIS_PREFIX: uniqueRedisPrefix(),
          DATABASE_URL: `sqlite:${join(dir, 'blocked.db')}`,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      const stdout: string[] = []
      const stderr: string[] = []
      createInterface({ input: child.stdout! }).on('line', (line) => stdout.push(line))
      createInterface({ input: child.stderr! }).on('line', (line) => stderr.push(line))
      const code = await new Promise<number | null>((resolve, reject) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL')
          reject(new Error(`still running after 60 s; stdout:\n${stdout.join('\n')}`))
        }, 60_000)
        child.once('exit', (exitCode) => {
          clearTimeout(timer)
          resolve(exitCode)
        })
      })
      assert.equal(code, 1)
      assert.ok(stderr.some((line) => /workers keep failing to start .*giving up/.test(line)), stderr.join('\n'))
      assert.ok(stderr.some((line) => /EADDRINUSE/.test(line)), 'the workers\' own error is shown')
      const entries = stdout.map((line) => JSON.parse(line) as { level: number; msg: string; delayMs?: number })
      const restarts = entries.filter((entry) => /starting another/.test(entry.msg))
      assert.ok(restarts.length <= 8, `${restarts.length} restarts: it should give up, not loop`)
      const delays = restarts.map((entry) => entry.delayMs ?? 0)
      assert.deepEqual(delays, [...delays].sort((a, b) => a - b), 'each retry waits at least as long as the one before')
      assert.ok(delays.at(-1)! >= 1_000, `the delays grow: ${delays.join(', ')}`)
      assert.ok(entries.some((entry) => entry.level === 60 && /giving up/.test(entry.msg)))
    } finally {
      blocker.close()
    }
  })
})
