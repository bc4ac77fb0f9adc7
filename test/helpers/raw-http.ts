// HTTP as bytes on a socket, for what fetch cannot send: malformed request lines,
// oversized headers, bodies cut short.
import { connect } from 'node:net'
import { Worker } from 'node:worker_threads'

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

export interface FloodedAnswer {
  /** Everything the server wrote before the connection closed. */
  answer: string
  /** Bytes of the body written to the socket (some may never have left it). */
  sent: number
  /** Ms from the first byte sent until the connection closed. */
  ms: number
  /** The connection's error, if it ended in one (ECONNRESET: the server reset it). */
  error?: string
}

/**
 * Sends `head` (a request's line and headers), then up to `chunks` chunks of 1 MiB of a
 * chunked body as fast as the socket takes them, reading the answer meanwhile, as a
 * client uploading a large body does; resolves once the connection is closed.
 */
export function floodBody(url: string, head: string, { chunks = 64, localAddress }: { chunks?: number; localAddress?: string } = {}): Promise<FloodedAnswer> {
  const { port } = new URL(url)
  return new Promise((resolve) => {
    const started = performance.now()
    const socket = connect({ port: Number(port), host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) })
    let answer = ''
    let error: string | undefined
    let sent = 0
    socket.on('data', (chunk) => (answer += chunk.toString()))
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message))
    socket.on('close', () => resolve({ answer, sent, ms: performance.now() - started, ...(error ? { error } : {}) }))
    socket.write(head)
    const chunk = `100000\r\n${'x'.repeat(0x100000)}\r\n`
    let written = 0
    const pump = () => {
      while (written < chunks && socket.writable) {
        written++
        sent += 0x100000
        if (!socket.write(chunk)) return void socket.once('drain', pump)
      }
      if (socket.writable) socket.end('0\r\n\r\n')
    }
    pump()
  })
}

/** floodBody from a thread of its own: against a server in this process, the client must not share its event loop. */
export async function floodBodyInThread(url: string, head: string, options: Parameters<typeof floodBody>[2] = {}): Promise<FloodedAnswer> {
  const worker = new Worker(new URL('./raw-http-thread.ts', import.meta.url), { workerData: { url, head, options } })
  try {
    return await new Promise<FloodedAnswer>((resolve, reject) => {
      worker.once('message', resolve)
      worker.once('error', reject)
    })
  } finally {
    await worker.terminate()
  }
}
