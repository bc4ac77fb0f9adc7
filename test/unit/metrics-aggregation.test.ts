// With PETSTORE_WORKERS, the primary answers GET /metrics by prom-client's aggregation of
// every worker's registry (cluster.ts): counts are summed, but a gauge that says "this
// is the state" must not read 2 because two workers say 1. Two workers' registries are
// made here as the server makes them, and merged the way the primary merges them.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import Fastify from 'fastify'
import { AggregatorRegistry } from 'prom-client'
import metricsPlugin, { createMetrics } from '../../src/plugins/metrics.js'
import type { Backlog } from '../../src/db/delivery-queue.js'

/** One worker's registry, in the state every worker shares: circuit open, Redis lost, a backlog of 3, writes paced at 40 a second. */
async function worker(oldestSince: number) {
  const metrics = createMetrics()
  const app = Fastify()
  const backlog: Backlog = { due: 3, retrying: 1, oldestSince }
  await app.register(metricsPlugin, {
    metrics,
    limiter: { degraded: true, shared: undefined } as never, // the two properties the plugin reads
    store: { calls: () => 10, backgroundCalls: () => 2, circuitOpen: true, deliveries: { backlog: async () => backlog } as never },
    clock: { now: () => 10_000 } as never,
    writePacing: { rate: 40 },
  })
  await app.ready()
  await app.inject('/metrics')
  const json = await metrics.registry.getMetricsAsJSON()
  await app.close()
  return json
}

const value = (text: string, line: RegExp) => Number(line.exec(text)?.[1])

describe('GET /metrics with several workers', () => {
  it('sums the counts, and shows a shared or per-worker state once', async () => {
    const merged = await AggregatorRegistry.aggregate([await worker(4_000), await worker(7_000)]).metrics()
    assert.equal(value(merged, /^petstore_store_circuit_open (\S+)$/m), 1, 'the circuit is open (in any worker), not "2"')
    assert.equal(value(merged, /^petstore_rate_limiter_degraded (\S+)$/m), 1)
    assert.equal(value(merged, /^petstore_webhook_deliveries_pending\{state="due"\} (\S+)$/m), 3, 'the one shared queue')
    assert.equal(value(merged, /^petstore_webhook_oldest_pending_seconds (\S+)$/m), 6, 'the older of the two readings')
    assert.equal(value(merged, /^petstore_write_pacing_permits_per_second (\S+)$/m), 80, "each worker's permits: the instance's rate")
    assert.equal(value(merged, /^petstore_store_calls_total (\S+)$/m), 20)
    assert.equal(value(merged, /^petstore_http_requests_total\{route="\/metrics",method="GET",status="200"\} (\S+)$/m), 2)
  })
})
