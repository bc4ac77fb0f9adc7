import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createReadCoalescer } from '../../src/db/batching/read-coalescer.js'

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

describe('read coalescer', () => {
  it('runs identical reads of one turn once and gives every caller the result', async () => {
    const read = createReadCoalescer<number>()
    let runs = 0
    const load = async () => ++runs
    const results = await Promise.all([read('a', load), read('a', load), read('a', load)])
    assert.deepEqual(results, [1, 1, 1])
    assert.equal(runs, 1)
  })

  it('runs different keys separately', async () => {
    const read = createReadCoalescer<string>()
    const results = await Promise.all([read('a', async () => 'A'), read('b', async () => 'B')])
    assert.deepEqual(results, ['A', 'B'])
  })

  it('starts a new read for a caller that arrives once the read is under way', async () => {
    const read = createReadCoalescer<number>()
    let runs = 0
    let finish = () => {}
    const slow = () =>
      new Promise<number>((resolve) => {
        const run = ++runs
        finish = () => resolve(run)
      })
    const first = read('a', slow)
    await nextTurn() // the first read has started: a commit may have come before it, not after
    assert.equal(runs, 1)
    const second = read('a', slow)
    finish()
    assert.equal(await first, 1)
    await nextTurn()
    assert.equal(runs, 2, 'the late caller got a read of its own')
    finish()
    assert.equal(await second, 2)
  })

  it('rejects every caller of a read that fails, and reads afresh afterwards', async () => {
    const read = createReadCoalescer<number>()
    const failing = async () => {
      throw new Error('connection lost')
    }
    const results = await Promise.allSettled([read('a', failing), read('a', failing)])
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'rejected'],
    )
    assert.equal(await read('a', async () => 7), 7)
  })
})
