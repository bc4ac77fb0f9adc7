// The baseline process: capture one real answer of the service, then serve it verbatim.
import { request } from 'node:http'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, spawnPinned, waitForPort, type Pinned } from './processes.js'

export const BASELINE_PATH = '/v1/pets?status=sold&limit=20'

// node:http writes these itself on every response; copying them would send them twice.
const SET_BY_NODE = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding'])

export interface CapturedResponse {
  status: number
  /** Flat [name, value, …] in the order and case the service sent them. */
  headers: string[]
  body: Buffer
}

export async function captureResponse(baseUrl: string, key: string): Promise<CapturedResponse> {
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}${BASELINE_PATH}`, { headers: { authorization: `Bearer ${key}` } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const headers: string[] = []
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          const name = res.rawHeaders[i]!
          if (!SET_BY_NODE.has(name.toLowerCase())) headers.push(name, res.rawHeaders[i + 1]!)
        }
        resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

/** Starts the baseline on `core`, answering `captured` to every request. */
export async function startBaseline(captured: CapturedResponse, dir: string, core: number): Promise<{ process: Pinned; url: string }> {
  const file = join(dir, 'baseline-response.json')
  writeFileSync(file, JSON.stringify({ status: captured.status, headers: captured.headers, body: captured.body.toString('base64') }))
  const port = await freePort()
  const pinned = spawnPinned(core, process.execPath, ['bench/baseline-server.js', file, String(port)])
  await waitForPort(port, pinned)
  const url = `http://127.0.0.1:${port}`
  // Same bytes and headers, or the ratios mean nothing.
  const served = await captureResponse(url, '')
  if (served.status !== captured.status || served.headers.join('\n') !== captured.headers.join('\n') || !served.body.equals(captured.body)) {
    throw new Error('the baseline does not answer what the service answered')
  }
  return { process: pinned, url }
}
