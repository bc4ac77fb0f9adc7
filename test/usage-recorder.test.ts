// The usage recorder over a real store (SQLite on disk): an account's history adds this
// instance's unwritten counts of its keys alone, and a write that fails keeps its
// counts for the next one.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createManualClock } from '../src/clock.js'
import { openStore } from '../src/db/open-store.js'
import type { Store } from '../src/db/store.js'
import { createUsageRecorder } from '../src/usage/recorder.js'
import { issueTestKey } from './helpers/keys.js'

const HOUR = 3_600_000

describe('usage recorder', () => {
  let dir: string
  let store: Store
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-usage-'))
    store = await openStore(`sqlite:${join(dir, 'petstore.db')}`)
  })
  after(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("adds an account's unwritten counts to its history, its keys' and no other's; a failed write keeps them", async () => {
    const clock = createManualClock(Date.parse('2026-11-25T10:15:00Z'))
    const first = await issueTestKey(store.apiKeys, { name: 'first' })
    const second = await issueTestKey(store.apiKeys, { name: 'second', accountId: first.accountId })
    const stranger = await issueTestKey(store.apiKeys, { name: 'stranger' })
    const recorder = createUsageRecorder({ usage: store.usage, clock, flushEveryMs: 3_600_000 })
    try {
            recorder.record(first, 'ok')
      recorder.record(second, 'ok')
      recorder.record(second, 'rate_limited')
      recorder.record(stranger, 'ok')
      const hour = Date.parse('2026-11-25T10:00:00Z')
      const account = () => recorder.history({ accountId: first.accountId }, hour, hour + HOUR)
      const expected = [
        { hour, outcome: 'ok', requests: 2 },
        { hour, outcome: 'rate_limited', requests: 1 },
      ]
      assert.deepEqual(await account(), expected, 'unwritten, of the account\'s two keys')
      assert.deepEqual(await recorder.history({ accountId: first.accountId, keyId: second.id }, hour, hour + HOUR), [
        { hour, outcome: 'ok', requests: 1 },
        { hour, outcome: 'rate_limited', requests: 1 },
      ])

      const add = store.usage.add
      store.usage.add = async () => Promise.reject(new Error('the store said no'))
      await recorder.flush()
      store.usage.add = add
      assert.deepEqual(await account(), expected, 'kept after a failed write')
      await recorder.flush()
      assert.deepEqual(await store.usage.history({ accountId: first.accountId }, hour, hour + HOUR), expected, 'written by the next flush')
      assert.deepEqual(await account(), expected, 'and counted once')
    } finally {
      await recorder.close()
    }
  })
})
