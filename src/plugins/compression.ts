// How answers are compressed. Those made per request: by @fastify/compress (registered
// in app.ts with these settings) or, for GET /v1/pets, by the route itself, from bytes
// it keeps with each cached page (list-page-answer.ts), at the fastest levels. Files
// that never change (openapi.json, the docs, the console): once per process, at the best.
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import type { RouteOptions } from 'fastify'

/** Smaller answers go as they are: compressing them saves fewer bytes than its headers cost. */
export const COMPRESSION_THRESHOLD = 1024

// The fastest levels: this service is CPU-bound, and a page of 20 pets costs 8 µs in
// brotli 1 (1.5 KB to 220 B) against 18 µs in brotli 4 (170 B).
export const BROTLI_QUALITY = 1
export const GZIP_LEVEL = 1

/**
 * An onRoute hook, before @fastify/compress's: only a list can pass the threshold, so an
 * operation whose every success answer is one object
 * skips the plugin's two hooks, 1.5 µs a request (docs/benchmarks.md). Routes that
 * describe no answer (/metrics) keep it; GET /v1/pets compresses its cached pages itself.
 */
export function compressListsOnly(route: RouteOptions): void {
  if (route.compress !== undefined) return
  const successes = Object.entries((route.schema?.response ?? {}) as Record<string, { type?: unknown }>).filter(([status]) => status.startsWith('2'))
  if (successes.length > 0 && successes.every(([, schema]) => schema.type !== 'array')) route.compress = false
}

/** `bytes` in `encoding`, at the levels above. */
export function compressFast(bytes: Buffer, encoding: 'br' | 'gzip'): Buffer {
  return encoding === 'br' ? brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY } }) : gzipSync(bytes, { level: GZIP_LEVEL })
}

/** Bytes sent many times, compressed once per process: the best ratio is worth its one-time cost. */
export function compressOnce(bytes: Buffer, encoding: 'br' | 'gzip'): Buffer {
  return encoding === 'br' ? brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } }) : gzipSync(bytes, { level: 9 })
}

/** The encodings a client accepts, br before gzip, none when it says q=0 (RFC 9110 §12.5.3, simplified: no wildcards). */
export function encodingFor(header: string | undefined): 'br' | 'gzip' | undefined {
  if (!header) return undefined
  const accepted = new Set(
    header
      .split(',')
      .map((part) => part.trim().toLowerCase())
      .filter((part) => !/;\s*q=0(\.0*)?$/.test(part))
      .map((part) => part.split(';')[0]!.trim()),
  )
  if (accepted.has('br')) return 'br'
  if (accepted.has('gzip')) return 'gzip'
  return undefined
}
