// Bodies are uncompressed JSON in UTF-8 only (415 otherwise), at most 64 KiB (413), valid UTF-8 (400:
// decoding would put U+FFFD in place of the bytes, and decision D3 stores exactly
// what was sent), without prototype keys and without deep nesting (400). secure-json-parse is the parser Fastify
// itself uses; calling it here lets each refusal say what was wrong.
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import sjson from 'secure-json-parse'
import { ApiError } from '../errors.js'

export const BODY_LIMIT = 64 * 1024
const MAX_DEPTH = 32
const utf8 = new TextDecoder('utf-8', { fatal: true })

/** The one answer to an empty body, from this parser or from Fastify's (FST_ERR_CTP_EMPTY_JSON_BODY). */
export const emptyBody = () => new ApiError('invalid_body', 'The request body is empty; send a JSON object, as this operation\'s schema in /v1/openapi.json describes.')

/** Whether a request comes with a body: chunked, or a Content-Length above 0. */
const hasBody = (headers: { 'transfer-encoding'?: string; 'content-length'?: string }) =>
  headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0')

/**
 * Whether the operation takes no body: GET and HEAD, whose bodies Fastify never reads,
 * and an operation of the document whose schema has none (completeOrder, cancelOrder,
 * revokeKey, redeliverEvent, the webhook test event …). Routes hidden from the document (the 405 and 404
 * answers of routes/method-not-allowed.ts) are not operations: they answer as before.
 */
function takesNoBody(request: FastifyRequest): boolean {
  if (request.method === 'GET' || request.method === 'HEAD') return true
  const schema = request.routeOptions.schema
  return schema !== undefined && schema.hide !== true && schema.body === undefined
}

/**
 * How long, and how many bytes, a connection closed before its request's body was read
 * still takes from a client that goes on sending: closed at once, its unread bytes made
 * the kernel answer with a reset, and a client still writing lost the answer already
 * sent (a 64 MB chunked GET saw "connection reset" instead of the 413).
 */
export const LINGER_MS = 2_000
export const LINGER_BYTES = 1024 * 1024

/**
 * Closes a connection whose request was answered before its body was read: the answer,
 * then this side's FIN at once, then what the client still sends is read and dropped
 * (never parsed, so no request after this one is answered, and never kept) until the
 * client closes, or LINGER_BYTES have arrived (then nothing more is read), or LINGER_MS
 * have passed. Node calls a socket's destroySoon() once a response with
 * `Connection: close` is written; this takes its place on that socket.
 */
function lingeringClose(this: Socket) {
  this.end()
  // Node's HTTP parser reads the socket itself; with its 'data' listener gone and one of
  // ours added, Node hands the socket's reads to 'data' listeners (as for an upgrade).
  this.removeAllListeners('data')
  let left = LINGER_BYTES
  this.on('data', (chunk: Buffer) => {
    left -= chunk.length
    if (left <= 0) this.pause()
  })
  this.resume()
  const timer = setTimeout(() => this.destroy(), LINGER_MS)
  this.once('close', () => clearTimeout(timer))
}

export default fp(
  async (app) => {
    // A body on an operation that takes none is refused before a byte of it is read:
    // answered at once, Node would then read it to its end to reuse the connection (a
    // 1 GB chunked GET was read whole, and answered 200), and a POST that takes none
    // read up to 64 KiB of it and accepted it when it was JSON. An empty body
    // (Content-Length: 0, or none) is not a body.
    app.addHook('onRequest', (request, _reply, done) => {
      if (hasBody(request.headers) && takesNoBody(request)) {
        // The path as the document writes it: /v1/store/orders/{orderId}/cancel, not Fastify's :orderId.
        const operation = request.routeOptions.url === undefined ? request.method : `${request.method} ${request.routeOptions.url.replace(/:(\w+)/g, '{$1}')}`
        return done(new ApiError('payload_too_large', `${operation} takes no request body; send none (or Content-Length: 0).`))
      }
      done()
    })
    // Any answer given before the request's body arrived whole (a refusal decided on
    // the headers: 401, 429, 413, 415) closes the connection rather than reading the
    // rest of the body, however long, to keep the connection open; the client, which
    // may still be sending, is given the time to read the answer (lingeringClose). A
    // request without a body has nothing left to read, though Node marks it complete
    // only after the hooks that refuse it have run: its connection stays open, so a
    // client refused 401 or 429 on a GET keeps its keep-alive connection.
    app.addHook('onSend', (request, reply, payload, done) => {
      if (!request.raw.complete && hasBody(request.headers)) {
        reply.header('connection', 'close')
        request.raw.socket.destroySoon = lingeringClose
      }
      done(null, payload)
    })
    app.removeAllContentTypeParsers()
    // RFC 7396's merge patch is JSON too, for PATCH alone (a create is not a patch).
    app.addContentTypeParser(['application/json', 'application/merge-patch+json'], { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (request, body, done) => {
      // Bodies arrive as sent: inflating them would let a few KiB become gigabytes past the body limit's check.
      const coding = request.headers['content-encoding']
      if (coding !== undefined && coding.trim().toLowerCase() !== 'identity') {
        return done(
          new ApiError('unsupported_media_type', `Content-Encoding ${coding} is not accepted: send the JSON body uncompressed.`, { headers: { 'accept-encoding': 'identity' } }),
          undefined,
        )
      }
      // JSON is UTF-8 (RFC 8259 §8.1): a body declared in another charset would be misread, not decoded.
      const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1]
      if (charset !== undefined && charset.toLowerCase() !== 'utf-8' && charset.toLowerCase() !== 'utf8') {
        return done(new ApiError('unsupported_media_type', `charset=${charset} is not accepted: send the JSON body in UTF-8 (charset=utf-8, or no charset).`), undefined)
      }
      if (request.method !== 'PATCH' && /^application\/merge-patch\+json/i.test(request.headers['content-type'] ?? '')) {
        return done(new ApiError('unsupported_media_type', 'application/merge-patch+json is for PATCH; send this body as application/json.'), undefined)
      }
      // Many HTTP clients send Content-Type: application/json on every POST: an operation
      // that takes no body (completeOrder, cancelOrder), or an optional one (rollKey), accepts an empty one.
      if ((body as Buffer).length === 0 && (request.routeOptions.schema?.body === undefined || request.routeOptions.config.optionalBody)) return done(null, undefined)
      try {
        done(null, parseJsonBody(decodeUtf8(body as Buffer)))
      } catch (error) {
        done(error as ApiError, undefined)
      }
    })
  },
  { name: 'json-body' },
)

export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes)
  } catch {
    throw new ApiError('invalid_body', 'The request body is not valid UTF-8; send JSON text encoded in UTF-8.')
  }
}

export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') throw emptyBody()
  if (nestingDepth(text) > MAX_DEPTH) {
    throw new ApiError('invalid_body', `The request body is nested more than ${MAX_DEPTH} levels deep.`)
  }
  try {
    return sjson.parse(text, null, { protoAction: 'error', constructorAction: 'error' })
  } catch (error) {
    const reason = (error as Error).message
    if (/prototype/.test(reason)) {
      throw new ApiError('invalid_body', 'The request body must not contain "__proto__" or "constructor.prototype" keys.')
    }
    throw new ApiError('invalid_body', `The request body is not valid JSON: ${reason}.`)
  }
}

/** Deepest nesting of objects and arrays in a JSON text, skipping strings; linear and non-recursive. */
export function nestingDepth(text: string): number {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c /* \ */) i++
      else if (c === 0x22 /* " */) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) deepest = Math.max(deepest, ++depth)
    else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--
  }
  return deepest
}
