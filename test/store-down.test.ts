// An instance whose store does not answer: alive, not ready, and every /v1 request
// that needs the store answered 503 (not 500), on every store.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { STORES, startTestServer } from './helpers/server.js'

for (const kind of STORES) describe(`when the store is down (${kind})`, () => {
  it('answers /healthz 200 (alive), /readyz 503 naming the store, and /v1 503 with Retry-After for a key not cached', async () => {
    const server = await startTestServer({ store: kind })
    try {
      const key = await server.createKey()
      await server.store.close()

      const live = await server.request('/healthz')
      assert.equal(live.status, 200, 'liveness is not readiness: restarting the process would not bring the store back')

      const ready = await server.request<{ code: string; details: { field: string }[] }>('/readyz')
      assert.equal(ready.status, 503)
      assert.equal(ready.body.code, 'service_unavailable')
      assert.deepEqual(ready.body.details.map((d) => d.field), ['store'])

      const res = await server.request<{ code: string; status: number }>('/v1/pets', { key })
      assert.equal(res.status, 503, res.text)
      assert.deepEqual(res.body, { ...res.body, code: 'service_unavailable', status: 503 })
      assert.equal(res.headers.get('retry-after'), '1')
    } finally {
      await server.app.close()
      await server.close().catch(() => {}) // the store is closed already; the temp files still go
    }
  })
})
