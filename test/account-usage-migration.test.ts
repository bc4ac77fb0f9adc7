// Migration 2026-11-29-023-account-usage over the previous release's usage rows: an
// account's history, read since from its own counts, still holds every request its keys
// made before the upgrade, revoked keys' included, and no other account's.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import type { Store } from '../src/db/store.js'
import { DIALECTS } from './helpers/dialects.js'
import { upgradeFrom, type UpgradedDatabase } from './helpers/previous-release.js'
import { needs } from './helpers/services.js'

/** The last migration of the previous release. */
const PREVIOUS_RELEASE = '2026-11-28-022-deliveries-due-by-endpoint'
const HOUR = 3_600_000
const NOW = Date.UTC(2026, 10, 29, 12)

for (const { dialect, create } of DIALECTS) {
  describe(`usage counted per account, over the previous release's usage (${dialect})`, async () => {
    if (dialect === 'postgres' && !(await needs('postgres', 'the PostgreSQL account usage migration'))) return

    let store: Store
    let upgraded: UpgradedDatabase | undefined
    const accounts: number[] = []
    const keys: number[] = []

    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the schema of the previous release, not today's Database type
    async function fillAsThePreviousRelease(db: Kysely<any>): Promise<void> {
      for (const name of ['one', 'other']) {
        accounts.push(Number((await db.insertInto('accounts').values({ name, plan: 'free', created_at: NOW }).returning('id').executeTakeFirstOrThrow()).id))
      }
      for (const [i, account] of [accounts[0], accounts[0], accounts[1]].entries()) {
        const key = await db
          .insertInto('api_keys')
          .values({ name: `k${i}`, prefix: 'ps_test_abcd', key_hash: `hash-${i}-${Math.random()}`, created_at: NOW, account_id: account, revoked_at: i === 1 ? NOW : null })
          .returning('id')
          .executeTakeFirstOrThrow()
        keys.push(Number(key.id))
      }
      await db
        .insertInto('api_key_usage')
        .values([
          { api_key_id: keys[0], hour: 10 * HOUR, outcome: 'ok', requests: 5 },
          { api_key_id: keys[1], hour: 10 * HOUR, outcome: 'ok', requests: 4 },
          { api_key_id: keys[1], hour: 11 * HOUR, outcome: 'rate_limited', requests: 2 },
          { api_key_id: keys[2], hour: 10 * HOUR, outcome: 'ok', requests: 7 },
        ])
        .execute()
    }

    before(async () => {
      ;({ store } = upgraded = await upgradeFrom(create, PREVIOUS_RELEASE, fillAsThePreviousRelease))
    })
    after(() => upgraded?.close())

    it("sums each account's keys, the revoked one too, into its history; a key's own stays its own", async () => {
      assert.deepEqual(await store.usage.history({ accountId: accounts[0]! }, 0, 12 * HOUR), [
        { hour: 10 * HOUR, outcome: 'ok', requests: 9 },
        { hour: 11 * HOUR, outcome: 'rate_limited', requests: 2 },
      ])
      assert.deepEqual(await store.usage.history({ accountId: accounts[1]! }, 0, 12 * HOUR), [{ hour: 10 * HOUR, outcome: 'ok', requests: 7 }])
      assert.deepEqual(await store.usage.history({ accountId: accounts[0]!, keyId: keys[1]! }, 0, 12 * HOUR), [
        { hour: 10 * HOUR, outcome: 'ok', requests: 4 },
        { hour: 11 * HOUR, outcome: 'rate_limited', requests: 2 },
      ])
    })

    it('adds what comes after to the sums the upgrade made', async () => {
      await store.usage.add([{ apiKeyId: keys[0]!, accountId: accounts[0]!, hour: 10 * HOUR, outcome: 'ok', requests: 1 }])
      assert.deepEqual((await store.usage.history({ accountId: accounts[0]! }, 10 * HOUR, 11 * HOUR))[0], { hour: 10 * HOUR, outcome: 'ok', requests: 10 })
    })
  })
}
