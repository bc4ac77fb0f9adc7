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

  describe('one at a time', () => {
    /** A read that ends when told, numbering its runs; `started` lists the runs begun. */
    function controlledReads() {
      const started: number[] = []
      const finishers: (() => void)[] = []
      const load = () =>
        new Promise<number>((resolve) => {
          const run = started.length + 1
          started.push(run)
          finishers.push(() => resolve(run))
        })
      return { started, load, finish: (run: number) => finishers[run - 1]!() }
    }

    it('gathers the callers arriving while a read is on its way into one next read, started when it ends, never before', async () => {
      const read = createReadCoalescer<number>({ oneAtATime: true })
      const { started, load, finish } = controlledReads()
      const first = read('a', load)
      await nextTurn()
      assert.deepEqual(started, [1])
      // Three callers over several turns while the first read is under way: none starts a read.
      const late = [read('a', load)]
      await nextTurn()
      late.push(read('a', load), read('a', load))
      await nextTurn()
      assert.deepEqual(started, [1], 'no second read while the first is on its way')
      finish(1)
      assert.equal(await first, 1)
      await nextTurn()
      assert.deepEqual(started, [1, 2], 'one read for all the late callers, begun after every one of them arrived')
      finish(2)
      assert.deepEqual(await Promise.all(late), [2, 2, 2])
    })

    it('after a read that failed, the next read still runs for its callers', async () => {
      const read = createReadCoalescer<number>({ oneAtATime: true })
      let fail = () => {}
      const first = read('a', () => new Promise<number>((_, reject) => (fail = () => reject(new Error('connection lost')))))
      await nextTurn()
      const second = read('a', async () => 8)
      fail()
      await assert.rejects(first, /connection lost/)
      assert.equal(await second, 8)
    })

    it('keeps keys apart: a read of one key never waits for another', async () => {
      const read = createReadCoalescer<number>({ oneAtATime: true })
      const { started, load } = controlledReads()
      void read('a', load)
      await nextTurn()
      assert.equal(await read('b', async () => 5), 5)
      assert.deepEqual(started, [1])
    })
  })
})
