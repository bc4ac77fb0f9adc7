// A real server process, for tests of what only a process shows: kill -9, signals.
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'

export interface ServerProcess {
  child: ChildProcess
  url: string
  /** Resolves with the exit code or signal when the process ends. */
  exited: Promise<number | NodeJS.Signals | null>
}

/** How the server is started: from the sources by default, or as a user would (`npm start`). */
const COMMANDS = {
  source: [process.execPath, '--import', 'tsx', 'src/server.ts'],
  // The npm that runs this test when there is one; dist/ is built (npm test builds it), so no prestart build.
  npmStart: process.env.npm_execpath
    ? [process.execPath, process.env.npm_execpath, 'start', '--ignore-scripts', '--silent']
    : ['npm', 'start', '--ignore-scripts', '--silent'],
} satisfies Record<string, readonly [string, ...string[]]>

export async function spawnServer(env: Record<string, string>, how: keyof typeof COMMANDS = 'source'): Promise<ServerProcess> {
  return spawnUntil(COMMANDS[how], env, /listening at (http:\/\/127\.0\.0\.1:\d+)/, 'listening at')
}

/** How a dispatcher is started: from the sources by default, or as a supervisor would through npm (`npm run dispatch`). */
const DISPATCH_COMMANDS = {
  source: [process.execPath, '--import', 'tsx', 'src/dispatch.ts'],
  npmRun: process.env.npm_execpath
    ? [process.execPath, process.env.npm_execpath, 'run', 'dispatch', '--ignore-scripts', '--silent']
    : ['npm', 'run', 'dispatch', '--ignore-scripts', '--silent'],
} satisfies Record<string, readonly [string, ...string[]]>

/**
 * `petstore dispatch`: webhook delivery in a process of its own. Its `url` is the pid
 * of the process that delivers, as its first log line says (under npm, not npm's).
 */
export async function spawnDispatcher(env: Record<string, string>, how: keyof typeof DISPATCH_COMMANDS = 'source'): Promise<ServerProcess> {
  return spawnUntil(DISPATCH_COMMANDS[how], env, /"pid":(\d+).*delivering the webhooks/, 'delivering the webhooks')
}

/** Starts `command` and waits for the log line `ready` matches; its first group is the url. */
async function spawnUntil([command, ...args]: readonly [string, ...string[]], env: Record<string, string>, ready: RegExp, saying: string): Promise<ServerProcess> {
  const child = spawn(command, args, {
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)))
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL') // never leave a server behind that nobody will stop
      reject(new Error(`the process did not say "${saying}" within 20 s (is LOG_LEVEL above info?)`))
    }, 20_000)
    exited.then((code) => reject(new Error(`the process exited (${String(code)}) before saying "${saying}"`)))
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const address = ready.exec(line)?.[1]
      if (address !== undefined) {
        clearTimeout(timer)
        resolve(address)
      }
    })
  })
  return { child, url, exited }
}
