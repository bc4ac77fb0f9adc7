// GET /console: the web console (console/, built by Vite into dist/console/ by
// `npm run build`), served by this process, outside /v1: no key, no rate limit. The
// page itself holds nothing: it talks to /v1 with the key the user pastes.
//
// The files are few and small: read once when the app starts, each compressed on its
// first request for an encoding and kept. Vite names every asset after its content,
// so assets are cached for a year (immutable); the page that names them is revalidated
// on every load (no-cache + ETag), so a new build is picked up at once.
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { extname, join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../errors.js'
import { SAME_ORIGIN_CSP, PAGE_HEADERS } from './docs.js'
import { compressOnce, encodingFor } from './compression.js'

const CONSOLE_PREFIX = '/console'

/** dist/console/ of this package: the same relative path from src/plugins/ (tests, dev) and dist/plugins/. */
export const CONSOLE_DIR = fileURLToPath(new URL('../../dist/console/', import.meta.url))

// The CSP (docs.ts): only this origin, and no inline script or style: the page is one
// HTML file naming a script and a style sheet. Preact and uPlot set styles through the
// DOM (CSSOM), which style-src does not govern. connect-src 'self': the key goes to
// this server only.

const SECURITY_HEADERS = { 'content-security-policy': SAME_ORIGIN_CSP, ...PAGE_HEADERS }

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
}

type Encoding = 'br' | 'gzip' | 'identity'

interface ConsoleFile {
  type: string
  cacheControl: string
  /** The bytes and the ETag of each encoding, made on first use. */
  variants: Partial<Record<Encoding, { body: Buffer; etag: string }>>
  raw: Buffer
}

/** Every file of the built console by its URL path below the prefix ('index.html', 'assets/index-AbC123.js'). */
function loadFiles(dir: string): Map<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>()
  if (!existsSync(dir)) return files
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue
    const path = join(entry.parentPath, entry.name)
    const name = relative(dir, path).split(sep).join('/')
    const type = TYPES[extname(name)]
    if (type === undefined) continue
    files.set(name, {
      type,
      cacheControl: name === 'index.html' ? 'no-cache' : 'public, max-age=31536000, immutable',
      variants: {},
      raw: readFileSync(path),
    })
  }
  return files
}

const COMPRESSIBLE = /^(text\/|image\/svg)/

/** The best encoding the client accepts (br, then gzip), by its Accept-Encoding; q=0 refuses one. */
function chooseEncoding(acceptEncoding: string | undefined, file: ConsoleFile): Encoding {
  if (!COMPRESSIBLE.test(file.type) || file.raw.length < 1024) return 'identity'
  return encodingFor(acceptEncoding) ?? 'identity'
}

function variant(file: ConsoleFile, encoding: Encoding) {
  const known = file.variants[encoding]
  if (known) return known
  // Once per file and encoding: these bytes are sent many times.
  const body = encoding === 'identity' ? file.raw : compressOnce(file.raw, encoding)
  // A strong ETag per representation (RFC 9110 §8.8.3): each encoding is its own bytes.
  const digest = createHash('sha256').update(file.raw).digest('base64url').slice(0, 27)
  const made = { body, etag: `"${digest}${encoding === 'identity' ? '' : `-${encoding}`}"` }
  file.variants[encoding] = made
  return made
}

/** RFC 9110 §13.1.2: a weak comparison of If-None-Match against the current ETag. */
function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false
  if (ifNoneMatch.trim() === '*') return true
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
}

export interface ConsoleOptions {
  /** Where the built console is; default dist/console/ of this package. */
  dir?: string
}

export default fp<ConsoleOptions>(
  async (app, { dir = CONSOLE_DIR }) => {
    const files = loadFiles(dir)

    function send(request: FastifyRequest, reply: FastifyReply, name: string) {
      const file = files.get(name)
      if (file === undefined) {
        if (name === 'index.html') throw new ApiError('not_found', 'The console is not built here: run `npm run build`, then restart the server.')
        return reply.callNotFound()
      }
      const encoding = chooseEncoding(request.headers['accept-encoding'], file)
      const { body, etag } = variant(file, encoding)
      reply.headers(SECURITY_HEADERS).header('cache-control', file.cacheControl).header('etag', etag).header('vary', 'accept-encoding')
      if (notModified(request.headers['if-none-match'], etag)) return reply.code(304).send()
      // Set here, so @fastify/compress leaves the bytes as they are.
      if (encoding !== 'identity') reply.header('content-encoding', encoding)
      return reply.type(file.type).send(body)
    }

    app.get(CONSOLE_PREFIX, (request, reply) => send(request, reply, 'index.html'))
    app.get(`${CONSOLE_PREFIX}/`, (request, reply) => send(request, reply, 'index.html'))
    app.get<{ Params: { '*': string } }>(`${CONSOLE_PREFIX}/*`, (request, reply) => send(request, reply, request.params['*']))
  },
  { name: 'console' },
)
