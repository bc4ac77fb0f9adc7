// The legitimate client of npm run abuse, in a thread of its own so that the attack's
// own work in the runner does not delay it: sequential reads with a valid key, each
// timed, until told to stop; it then posts the times (ms) and exits.
import { request } from 'node:http'
import { parentPort, workerData } from 'node:worker_threads'

const { url, key } = workerData as { url: string; key: string }
const times: number[] = []
let running = true
parentPort!.once('message', () => (running = false))

function one(): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = request(new URL('/v1/pets?limit=5', url), { headers: { authorization: `Bearer ${key}` }, agent: false, localAddress: '127.0.0.1' }, (res) => {
      res.resume()
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`the legitimate client got ${res.statusCode}`))
        times.push(performance.now() - started)
        resolve()
      })
    })
    req.on('error', reject)
    req.end()
  })
}

try {
  while (running) await one()
  parentPort!.postMessage({ times })
} catch (error) {
  parentPort!.postMessage({ error: (error as Error).message })
}
