// PETSTORE_WORKERS: the primary's own log lines are JSON like the workers' request
// lines, so a log shipper reading stdout sees one format (issue 12).
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { connect, createServer, type AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { createKeyIn, UNLIMITED } from './helpers/keys.js'
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

  it('drains when signals go to the whole process group (systemd, Ctrl-C), twice: a POST under way gets its 201, exit 0', async () => {
    const databaseUrl = `sqlite:${join(dir, 'group.db')}`
    const secret = (await createKeyIn(databaseUrl, { plan: 'enterprise', custom: UNLIMITED })).secret
    // Its own process group, as a service under systemd or a command in a terminal has;
    // the built server, as a supervisor runs it (npm test builds it first).
    const child = spawn(process.execPath, ['dist/server.js'], {
      env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', PETSTORE_WORKERS: '2', REDIS_URL, PETSTORE_REDIS_PREFIX: uniqueRedisPrefix(), DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    })
    const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)))
    try {
      const lines: string[] = []
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no worker listened within 20 s:\n${lines.join('\n')}`)), 20_000)
        createInterface({ input: child.stdout! }).on('line', (line) => {
          lines.push(line)
          const address = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(line)?.[1]
          if (address === undefined || lines.filter((l) => l.includes('listening at')).length < 2) return
          clearTimeout(timer)
          resolve(address)
        })
      })
      const { hostname, port } = new URL(url)
      const body = JSON.stringify({ name: 'group signal', categoryId: 1 })
      const socket = connect(Number(port), hostname)
      await once(socket, 'connect')
      socket.on('error', () => {})
      let received = ''
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()))
      socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 5)}`)
      await new Promise((resolve) => setTimeout(resolve, 300))
      // To every process of the group: the primary, and each worker, which the primary
      // passes it on to as well. Then once more, as a second Ctrl-C or a supervisor's
      // repeated stop would (the first copy's handling must not leave a process open to it).
      process.kill(-child.pid!, 'SIGTERM')
      await new Promise((resolve) => setTimeout(resolve, 100))
      process.kill(-child.pid!, 'SIGTERM')
      await new Promise((resolve) => setTimeout(resolve, 600))
      socket.write(body.slice(5))
      await once(socket, 'close', { signal: AbortSignal.timeout(15_000) }).catch(() => {})
      assert.match(received, /^HTTP\/1\.1 201 /)
      const timeout = new Promise((resolve) => setTimeout(resolve, 20_000, 'still running 20 s after SIGTERM'))
      assert.equal(await Promise.race([exited, timeout]), 0)
    } finally {
      try {
        process.kill(-child.pid!, 'SIGKILL')
      } catch {
        // gone already
      }
    }
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
