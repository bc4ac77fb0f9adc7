// The logger's options: JSON lines for machines (the default), or pino-pretty's
// coloured lines for a person reading a terminal (LOG_FORMAT=pretty, development only).
import type { LoggerOptions } from 'pino'
import type { Config } from './config.js'

export function loggerOptions(config: Pick<Config, 'logLevel' | 'logFormat'>): LoggerOptions {
  if (config.logFormat === 'json') return { level: config.logLevel }
  try {
    import.meta.resolve('pino-pretty')
  } catch {
    throw new Error('LOG_FORMAT=pretty needs pino-pretty, a development dependency: install with "npm install" (not --omit=dev), or unset LOG_FORMAT')
  }
  return {
    level: config.logLevel,
    // pino runs it in a worker thread, off the request path.
    transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true } },
  }
}
