// PETSTORE_WORKERS: one GET /metrics answers for every worker (prom-client's cluster
// aggregation through the primary), whichever worker takes the scrape.
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { get } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { needs, REDIS_URL, uniqueRedisPrefix } from './helpers/services.js'

const withRedis = await needs('redis', 'the PETSTORE_WORKERS metrics test')

/** A GET on a connection of its own (no keep-alive), so that the primary hands each to the next worker. */
const fetchAlone = (url: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      let body = ''
      res.on('data', (chunk: Buffer) => (body += chunk.toString()))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    }).on('error', reject)
  })

describe('PETSTORE_WORKERS=2 and GET /metrics', { skip: !withRedis }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-cluster-metrics-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it("sums every worker's counts in each scrape, and shows the shared queue once; warns of an unread setting once", async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      // PETSTORE_WORKER, a typo: warned of once, by the primary, not by each worker.
      env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', PETSTORE_WORKERS: '2', PETSTORE_WORKER: '2', REDIS_URL, PETSTORE_REDIS_PREFIX: uniqueRedisPrefix(), DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}` },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const exited = new Promise((resolve) => child.once('exit', resolve))
    try {
      const urls: string[] = []
      const lines: string[] = []
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('two workers did not listen within 30 s')), 30_000)
        createInterface({ input: child.stdout! }).on('line', (line) => {
          lines.push(line)
          const url = /listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(line)?.[1]
          if (url && urls.push(url) === 2) {
            clearTimeout(timer)
            resolve()
          }
        })
      })
      const url = urls[0]!
      assert.equal(lines.filter((line) => line.includes('PETSTORE_WORKER is set but is not a setting')).length, 1, 'one warning, not one a worker')
      for (let i = 0; i < 20; i++) assert.equal((await fetchAlone(`${url}/healthz`)).status, 200)
      for (let i = 0; i < 4; i++) {
        const scrape = await fetchAlone(`${url}/metrics`)
        assert.equal(scrape.status, 200)
        const count = /^petstore_http_requests_total\{route="\/healthz",method="GET",status="200"\} (\d+)$/m.exec(scrape.body)?.[1]
        assert.equal(Number(count), 20, `scrape ${i + 1}: the 20 requests, both workers' (${count})`)
        assert.equal(scrape.body.match(/^petstore_webhook_deliveries_pending\{state="due"\} /gm)?.length, 1)
        assert.match(scrape.body, /^petstore_webhook_deliveries_pending\{state="due"\} 0$/m, 'the shared queue, not summed')
      }
    } finally {
      child.kill('SIGTERM')
      await exited
    }
  })
})
