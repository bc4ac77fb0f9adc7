import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createTurnBatcher, type BatchItem } from '../../src/db/batching/turn-batcher.js'

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

describe('turn batcher', () => {
  it('sends what one turn asked for as one batch, in arrival order', async () => {
    const batches: number[][] = []
    const submit = createTurnBatcher<number, number>(async (batch) => {
      batches.push(batch.map((item) => item.input))
      for (const item of batch) item.resolve(item.input * 10)
    })
    assert.deepEqual(await Promise.all([submit(1), submit(2), submit(3)]), [10, 20, 30])
    assert.deepEqual(batches, [[1, 2, 3]])
  })

  it('holds what arrives while a batch is out, and sends it together when that one ends', async () => {
    const batches: number[][] = []
    const out: Array<BatchItem<number, number>[]> = []
    const submit = createTurnBatcher<number, number>(
      (batch) => {
        batches.push(batch.map((item) => item.input))
        out.push(batch)
        return new Promise<void>((resolve) => setTimeout(() => {
          for (const item of batch) item.resolve(item.input)
          resolve()
        }, 20))
      },
    )
    const first = submit(1)
    await nextTurn()
    const later = [submit(2), submit(3)]
    await nextTurn()
    const last = submit(4)
    assert.deepEqual(batches, [[1]], 'nothing else is sent while the first batch is out')
    assert.deepEqual(await Promise.all([first, ...later, last]), [1, 2, 3, 4])
    assert.deepEqual(batches, [[1], [2, 3, 4]])
  })

  it('rejects the items a failed send left unsettled, and only those', async () => {
    const submit = createTurnBatcher<number, number>(async (batch) => {
      batch[0]!.resolve(1)
      throw new Error('connection lost')
    })
    const [first, second] = await Promise.allSettled([submit(1), submit(2)])
    assert.deepEqual(first, { status: 'fulfilled', value: 1 })
    assert.equal(second.status, 'rejected')
    assert.match(String((second as PromiseRejectedResult).reason), /connection lost/)
  })

  it('goes on after a send that threw before returning a promise', async () => {
    let calls = 0
    const submit = createTurnBatcher<number, number>((batch) => {
      if (++calls === 1) throw new Error('sync failure')
      batch.forEach((item) => item.resolve(item.input))
      return Promise.resolve()
    })
    await assert.rejects(submit(1), /sync failure/)
    assert.equal(await submit(2), 2)
  })
})
