// floodBody in a thread of its own (raw-http.ts: floodBodyInThread), so that the client
// reads on an event loop of its own, not the test server's, as a real client does.
import { parentPort, workerData } from 'node:worker_threads'
import { floodBody } from './raw-http.js'

const { url, head, options } = workerData as { url: string; head: string; options: Parameters<typeof floodBody>[2] }
parentPort!.postMessage(await floodBody(url, head, options))
