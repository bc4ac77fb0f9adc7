// While the webhooks fall behind, the writes that make events are paced over HTTP, on
// both stores: they go in turn at the pace's rate, one that would wait past 2 s is
// answered 503 with Retry-After at once and does nothing, and reads and refusals for a
// key's scope never wait. The lag is the test's to set (server.ts takes it from its
// dispatcher); each second is judged when the test says.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import type { ErrorBody } from '../src/errors.js'
import type { Pet } from '../src/schemas/pet.js'
import { writePacing, type WritePacing } from '../src/webhooks/write-pacing.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

const LIMITS = { perMinute: 100_000, perDay: 1_000_000 }

for (const store of STORES) {
  describe(`write pacing over HTTP (${store})`, () => {
    let server: TestServer
    let pacing: WritePacing
    let lag = 0
    let key: string

    before(async () => {
      pacing = writePacing({ lagMs: () => lag, maxLagMs: 60_000, timer: false })
      server = await startTestServer({ store, writePacing: pacing })
      key = await server.createKey('enterprise', LIMITS)
    })
    after(async () => {
      pacing.stop()
      await server.close()
    })

    const create = (name: string) => server.request<Pet | ErrorBody>('/v1/pets', { method: 'POST', key, json: { name, categoryId: 3 } })
    /** Every pet, by the inventory's counts. */
    const count = async () => {
      const inventory = await server.request<Record<string, number>>('/v1/store/inventory', { key })
      return Object.values(inventory.body).reduce((a, b) => a + b, 0)
    }

    it('paces creates while the webhooks are 20 s behind: some go in turn over 2 s, the rest are refused 503 with Retry-After and create nothing', async () => {
      assert.equal((await create('before')).status, 201)
      const before = await count()
      lag = 20_000
      pacing.judge()
      assert.equal(pacing.rate, 10, 'half of the second before, never below 10 a second')

      const started = performance.now()
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => create(`paced ${i}`).then((reply) => ({ ...reply, after: performance.now() - started }))),
      )
      const created = answers.filter((answer) => answer.status === 201)
      const refused = answers.filter((answer) => answer.status === 503)
      assert.equal(created.length + refused.length, 40, `only 201 and 503: ${answers.map((a) => a.status).join(' ')}`)
      assert.ok(created.length >= 18 && created.length <= 24, `about 2 s of writes at 10 a second went: ${created.length}`)
      assert.ok(Math.max(...created.map((a) => a.after)) >= 1_500, 'in turn, not at once')
      for (const answer of refused) {
        assert.ok(answer.after < 1_000, 'refused at once, not after waiting')
        assert.ok(Number(answer.headers.get('retry-after')) >= 1)
        const body = answer.body as ErrorBody
        assert.equal(body.code, 'service_unavailable')
        assert.equal(body.status, 503)
        assert.match(body.message, /Webhook deliveries are 20 s behind/)
      }
      assert.equal(await count(), before + created.length, 'a refused write did nothing')
    })

    it('never makes a read, or a write refused for its scope, wait for a permit', async () => {
      const readOnly = await server.createKey('enterprise', LIMITS, { scopes: ['pets:read'] })
      lag = 20_000
      pacing.judge()
      // Permits taken for the next 2 s: a write now would wait.
      const queued = Promise.all(Array.from({ length: 15 }, (_, i) => create(`queued ${i}`)))
      await new Promise((resolve) => setTimeout(resolve, 50))
      const started = performance.now()
      const read = await server.request('/v1/pets?limit=5', { key })
      const forbidden = await server.request<ErrorBody>('/v1/pets', { method: 'POST', key: readOnly, json: { name: 'no scope' } })
      assert.equal(read.status, 200)
      assert.equal(forbidden.status, 403)
      assert.equal(forbidden.body.code, 'insufficient_scope')
      assert.ok(performance.now() - started < 500, 'answered without waiting behind the paced writes')
      await queued
    })

    it('lets writes go at once again when the lag is back under an eighth of the bound', async () => {
      lag = 20_000
      pacing.judge()
      assert.notEqual(pacing.rate, undefined)
      lag = 7_000
      pacing.judge()
      assert.equal(pacing.rate, undefined)
      const started = performance.now()
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => create(`free ${i}`)))
      assert.deepEqual(new Set(answers.map((answer) => answer.status)), new Set([201]))
      assert.ok(performance.now() - started < 2_000)
    })
  })
}
