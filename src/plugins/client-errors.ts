// What the HTTP parser refuses before Fastify sees a request: malformed HTTP (400),
// headers over Node's 16 KiB (431), a request that does not arrive in time (408).
// The answer is written on the raw socket, still as our Error body, then the socket
// is closed both ways: a half-closed socket let a slow client keep it open.
import type { Socket } from 'node:net'
import type { Server } from 'node:http'
import { STATUS_CODES } from 'node:http'
import { errorBody, type ErrorCode } from '../errors.js'

const MESSAGES: Record<string, [ErrorCode, string]> = {
  HPE_HEADER_OVERFLOW: ['request_header_fields_too_large', 'The request headers are larger than the 16 KiB allowed.'],
  ERR_HTTP_REQUEST_TIMEOUT: ['request_timeout', 'The request did not arrive in time.'],
}

export function answerClientError(error: Error & { code?: string }, socket: Socket) {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  const [code, message] = MESSAGES[error.code ?? ''] ?? ['bad_request', 'The request is not valid HTTP/1.1.']
  answerAndClose(socket, code, message)
}

/** Writes an Error answer on a raw socket and closes it once written, whatever the client still sends. */
function answerAndClose(socket: Socket, code: ErrorCode, message: string) {
  const error = errorBody(code, message)
  const body = JSON.stringify(error)
  const { status } = error
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  )
}

/**
 * Refuses a connection beyond `max` open ones from its address (PETSTORE_MAX_CONNECTIONS_PER_IP):
 * 429 on the raw socket, closed at once, before any request on it is read.
 */
export function limitConnectionsPerAddress(server: Server, max: number) {
  if (max === 0) return
  const open = new Map<string, number>()
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? ''
    const count = (open.get(address) ?? 0) + 1
    if (count > max) {
      answerAndClose(socket, 'rate_limited', `This address has ${max} connections open, the most allowed; reuse them (keep-alive) or close some.`)
      return
    }
    open.set(address, count)
    socket.once('close', () => {
      const left = open.get(address)! - 1
      if (left === 0) open.delete(address)
      else open.set(address, left)
    })
  })
}
