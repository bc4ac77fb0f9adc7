// What the HTTP parser refuses before Fastify sees a request: malformed HTTP (400),
// headers over Node's 16 KiB (431), a request that does not arrive in time (408).
// The answer is written on the raw socket, still as our Error body, then closed.
import type { Socket } from 'node:net'
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
  const body = JSON.stringify(errorBody(code, message))
  const status = errorBody(code, message).status
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  )
}
