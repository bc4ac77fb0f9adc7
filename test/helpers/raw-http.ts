// HTTP as bytes on a socket, for what fetch cannot send: malformed request lines,
// oversized headers, bodies cut short.
import { connect } from 'node:net'

/**
 * Sends `bytes`, half-closes, and resolves with everything the server wrote before it
 * closed. Node's server aborts a request still running when the client half-closes:
 * for one that waits on the store, send `Connection: close` and `halfClose: false`.
 */
export function rawHttp(url: string, bytes: string, { halfClose = true } = {}): Promise<string> {
  const { port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1')
    let answer = ''
    socket.on('data', (chunk) => (answer += chunk.toString()))
    socket.on('end', () => resolve(answer))
    socket.on('error', reject)
    if (halfClose) socket.end(bytes)
    else socket.write(bytes)
  })
}

/** The status and the JSON body of a raw answer. */
export function parseRawAnswer(answer: string): { status: number; body: unknown } {
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1])
  const text = answer.slice(answer.indexOf('\r\n\r\n') + 4)
  return { status, body: text ? JSON.parse(text) : undefined }
}
