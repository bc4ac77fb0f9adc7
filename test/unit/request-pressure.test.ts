import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { requestPressure } from '../../src/webhooks/request-pressure.js'

/** A request the server has begun answering; `done` ends it as the response's 'close' would. */
function request(pressure: ReturnType<typeof requestPressure>) {
  const response = new EventEmitter()
  pressure.onRequest({} as IncomingMessage, response as ServerResponse)
  return { done: () => response.emit('close') }
}

/** Keeps the event loop busy, as a stream of requests would, then lets the window's timer run. */
async function spin(ms: number) {
  const until = performance.now() + ms
  while (performance.now() < until);
  await idle(5)
}
const idle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('request pressure (when the dispatcher gives way)', () => {
  it('is busy when requests came and the loop was busy, and not when either is missing', async () => {
    await idle(10) // the event loop measures nothing until it has started, and the runner may call this before
    const pressure = requestPressure({ threshold: 0.5, windowMs: 100 })
    try {
      await spin(120)
      assert.equal(pressure.busy(), false, 'a busy loop without requests (the dispatcher itself, catching up)')
      request(pressure).done()
      await spin(120)
      assert.equal(pressure.busy(), true, 'requests and a busy loop')
      request(pressure).done()
      await idle(150)
      assert.equal(pressure.busy(), false, 'requests, but an idle loop')
    } finally {
      pressure.stop()
    }
  })

  it('is busy when requests queue although the loop is idle (the database is the bottleneck), and not once they are answered', async () => {
    await idle(10)
    const pressure = requestPressure({ threshold: 0.9, queueing: 16, windowMs: 100 })
    try {
      const waiting = Array.from({ length: 20 }, () => request(pressure))
      await idle(150)
      assert.equal(pressure.busy(), true, '20 in flight throughout')
      for (const r of waiting) r.done()
      request(pressure).done()
      await idle(150)
      assert.equal(pressure.busy(), false, 'answered at once')
    } finally {
      pressure.stop()
    }
  })

  it('is busy before its window ends when requests already fill the loop', async () => {
    await idle(10)
    const pressure = requestPressure({ threshold: 0.5, windowMs: 1_000 })
    try {
      request(pressure).done()
      const until = performance.now() + 300
      while (performance.now() < until);
      assert.equal(pressure.busy(), true)
    } finally {
      pressure.stop()
    }
  })
})
