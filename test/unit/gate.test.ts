// The bound on searches and long lists (src/db/gate.ts): so many at once, so many
// waiting in order, none waiting past its limit, refused as the store's being busy
// (errors.test.ts: 503 with Retry-After, not logged as an error).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createGate } from '../../src/db/gate.js'
import { StoreBusyError } from '../../src/db/store-errors.js'

/** A work that ends when told to. */
function held() {
  let end!: () => void
  const done = new Promise<void>((resolve) => (end = resolve))
  return { work: () => done, end }
}

describe('gate', () => {
  it('runs `permits` at once, queues `queue` more in order, and refuses the rest at once', async () => {
    const gate = createGate({ permits: 1, queue: 2, maxWaitMs: 60_000, what: 'searches' })
    const order: string[] = []
    const first = held()
    const running = gate(async () => (await first.work(), order.push('first')))
    const queued = [gate(async () => order.push('second')), gate(async () => order.push('third'))]
    await assert.rejects(
      gate(async () => order.push('fourth')),
      (error: unknown) => error instanceof StoreBusyError && error.what === 'searches',
    )
    first.end()
    await Promise.all([running, ...queued])
    assert.deepEqual(order, ['first', 'second', 'third'])
    assert.equal(await gate(async () => 'again'), 'again', 'every permit back')
  })

  it('refuses a waiter past maxWaitMs and never runs it, and a work that throws gives its permit back', async () => {
    const gate = createGate({ permits: 1, queue: 4, maxWaitMs: 20, what: 'searches' })
    const first = held()
    const running = gate(first.work)
    let ran = false
    await assert.rejects(gate(async () => (ran = true)), (error: unknown) => error instanceof StoreBusyError)
    first.end()
    await running
    assert.equal(ran, false, 'its caller was answered: its work is not run for no one')
    await assert.rejects(gate(async () => Promise.reject(new Error('broken'))), /broken/)
    assert.equal(await gate(async () => 'served'), 'served')
  })
})
