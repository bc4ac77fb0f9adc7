// --webhook: a receiver on loopback that answers every delivery 204 and counts them,
// timing each from its event's `timestamp` (written with the change) to its arrival,
// and the endpoint that subscribes it to every event of the service under test. It
// runs in the bench's own process, on the load generator's core (pinSelf): it is
// there to take the deliveries, not to be measured, and never takes the service's CPU.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

export async function startReceiver() {
  let delivered = 0
  /** Milliseconds from each event's write to its delivery, since the last `takeLatencies`. */
  let latencies: number[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => (body += chunk))
    req.on('end', () => {
      delivered++
      const timestamp = /"timestamp":"([^"]+)"/.exec(body)?.[1]
      if (timestamp !== undefined) latencies.push(Date.now() - Date.parse(timestamp))
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    get delivered() {
      return delivered
    },
    /** The event-to-delivery times (ms) since the last call, sorted; the next call starts afresh. */
    takeLatencies(): Float64Array {
      const taken = Float64Array.from(latencies).sort()
      latencies = []
      return taken
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>

/** Subscribes `receiver` to every event of the service at `url`. */
export async function subscribe(url: string, key: string, receiver: Receiver): Promise<void> {
  const res = await fetch(`${url}/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url, enabledEvents: ['*'], description: 'npm run bench -- --webhook' }),
  })
  if (res.status !== 201) throw new Error(`could not subscribe the bench's receiver: ${res.status} ${await res.text()}`)
}
