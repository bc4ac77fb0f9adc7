// Child processes of the benchmark: pinned to a core with taskset, tracked so that
// every one of them is ended however the run ends (normal exit, failure, Ctrl-C).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'

const children = new Set<ChildProcess>()

/** Kills what is still running; synchronous, so it also works from an 'exit' handler. */
/** Node's flags for the service and `petstore dispatch`, as `npm start` and `npm run dispatch` give them (package.json): V8's young generation capped at 2 × 16 MB. */
export const SERVICE_NODE_FLAGS = ['--max-semi-space-size=16']

export function killAll(): void {
  for (const child of children) child.kill('SIGKILL')
  children.clear()
}

export interface Pinned {
  child: ChildProcess
  pid: number
  /** Resolves with the exit code or signal. */
  exited: Promise<number | string | null>
  /** Last lines of stderr, to explain a failure. */
  stderr(): string
}

/**
 * Keeps this process, every thread of it, on one core: the harness's own work (the
 * webhook receiver, the seeding) never takes the service's core.
 */
export function pinSelf(core: number): void {
  execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', String(core), String(process.pid)], { stdio: 'ignore' })
}

/** Starts `command` on one CPU core (taskset execs it, so the pid is the command's own). */
export function spawnPinned(core: number, command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Pinned {
  const child = spawn('taskset', ['-c', String(core), command, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  if (child.pid === undefined) throw new Error(`could not start ${command}`)
  children.add(child)
  let tail = ''
  child.stderr!.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-4000)))
  const exited = new Promise<number | string | null>((resolve) =>
    child.once('exit', (code, signal) => {
      children.delete(child)
      resolve(signal ?? code)
    }),
  )
  return { child, pid: child.pid, exited, stderr: () => tail }
}

/** Collects stdout and waits for the exit; kills the process if it overruns `timeoutMs`. */
export async function runToEnd(pinned: Pinned, timeoutMs: number): Promise<string> {
  let out = ''
  pinned.child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()))
  const timer = setTimeout(() => pinned.child.kill('SIGKILL'), timeoutMs)
  const code = await pinned.exited
  clearTimeout(timer)
  if (code !== 0) throw new Error(`load generator ended with ${String(code)}: ${pinned.stderr().trim()}`)
  return out
}

/** Asks SIGTERM first (the service drains, and --cpu-prof writes its profile), then SIGKILL. */
export async function stop(pinned: Pinned, graceMs = 10_000): Promise<void> {
  if (pinned.child.exitCode !== null || pinned.child.signalCode !== null) return
  pinned.child.kill('SIGTERM')
  const timer = setTimeout(() => pinned.child.kill('SIGKILL'), graceMs)
  await pinned.exited
  clearTimeout(timer)
}

/** A port nobody listens on right now (the service is then started with PORT set to it). */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise((resolve) => server.close(resolve))
  if (address === null || typeof address === 'string') throw new Error('no free port')
  return address.port
}

/** Resolves once something accepts connections on the port; fails if the process dies first. */
export async function waitForPort(port: number, pinned: Pinned, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let dead = false
  void pinned.exited.then(() => (dead = true))
  while (Date.now() < deadline) {
    if (dead) throw new Error(`the process exited before listening: ${pinned.stderr().trim()}`)
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (open) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`nothing listened on port ${port} within ${timeoutMs / 1000} s`)
}

/** Peak resident set size in bytes (VmHWM), as the kernel counts it for the process. */
/**
 * CPU time the process has used so far (user + system, all threads), in seconds:
 * /proc/PID/stat's utime and stime, in clock ticks. CPU time per request is the
 * figure a shared, noisy machine spoils least: another process taking the core makes
 * req/s fall, but not the work each request costs.
 */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const [utime, stime] = [Number(fields[11]), Number(fields[12])]
  return (utime + stime) / CLOCK_TICKS
}
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100

export function peakRss(pid: number): number {
  const kib = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  if (kib === undefined) throw new Error(`no VmHWM for process ${pid}`)
  return Number(kib) * 1024
}

/**
 * Starts a new peak-RSS measurement: writing 5 to clear_refs resets VmHWM to the
 * current RSS (proc(5)). Returns false where the kernel refuses; the peak then
 * covers the whole life of the process.
 */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}
