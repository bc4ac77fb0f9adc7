// How answers made per request are compressed: by @fastify/compress (registered in
// app.ts with these settings) or, for GET /v1/pets, by the route itself, from bytes it
// keeps with each cached page (list-page-answer.ts). One set of numbers for both.
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'

/** Smaller answers go as they are: compressing them saves fewer bytes than its headers cost. */
export const COMPRESSION_THRESHOLD = 1024

// The fastest levels: this service is CPU-bound, and a page of 20 pets costs 8 µs in
// brotli 1 (1.5 KB to 220 B) against 18 µs in brotli 4 (170 B).
export const BROTLI_QUALITY = 1
export const GZIP_LEVEL = 1

/** `bytes` in `encoding`, at the levels above. */
export function compressFast(bytes: Buffer, encoding: 'br' | 'gzip'): Buffer {
  return encoding === 'br' ? brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY } }) : gzipSync(bytes, { level: GZIP_LEVEL })
}
