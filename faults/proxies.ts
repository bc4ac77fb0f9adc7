// The fault proxies of one instance, in a process of their own (started by run.ts):
// what one instance's faults cost the proxies' event loop never delays another
// instance's database traffic. Commands arrive over IPC: {target, fault, ms?}; the
// answer to each is {done: true}. The first message out is {ports: {pg, redis}}.
import { startTcpProxy, type TcpProxy } from '../test/helpers/tcp-proxy.js'

export type Target = 'pg' | 'redis'
export type Fault = 'reset' | 'close' | 'silence' | 'heal' | 'delay'
export interface Command {
  target: Target
  fault: Fault
  ms?: number
}

const listenHost = process.argv[2]!
const proxies: Record<Target, TcpProxy> = {
  pg: await startTcpProxy({ host: '127.0.0.1', port: 5432 }, { listenHost }),
  redis: await startTcpProxy({ host: '127.0.0.1', port: 6379 }, { listenHost }),
}
process.send!({ ports: { pg: proxies.pg.port, redis: proxies.redis.port } })
process.on('message', (command: Command) => {
  const proxy = proxies[command.target]
  if (command.fault === 'delay') proxy.delay(command.ms ?? 0)
  else proxy[command.fault]()
  process.send!({ done: true })
})
// Gone with the rig: a disconnected IPC channel means run.ts ended, however it ended.
process.on('disconnect', () => {
  void Promise.all([proxies.pg.stop(), proxies.redis.stop()]).finally(() => process.exit(0))
})
