// GET /metrics on a port of its own, for Prometheus to scrape: `petstore dispatch`
// (PETSTORE_DISPATCH_METRICS_PORT), which serves nothing else, and the API
// (PETSTORE_METRICS_PORT), whose metrics then leave the public port. A port that only
// the scraper can reach keeps the counts from anyone with the API's address, and a
// scrape's cost (the queue's backlog read from the database, every worker asked) from
// anyone who would repeat it.
import { createServer, type Server } from 'node:http'

export interface MetricsSource {
  /** The Prometheus text: this process's registry, or every worker's. */
  scrape(): Promise<string>
  contentType: string
}

/** Listens on `host`:`port` until closed; answers GET /metrics and a 404 to anything else. */
export async function serveMetrics({ scrape, contentType }: MetricsSource, host: string, port: number): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || new URL(request.url ?? '/', 'http://x').pathname !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('GET /metrics is all this port serves\n')
      return
    }
    scrape().then(
      (text) => response.writeHead(200, { 'content-type': contentType }).end(text),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('could not collect the metrics\n'),
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  return server
}

/** Stops listening and ends the scrapers' connections. */
export async function closeMetrics(server: Server): Promise<void> {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
}
