// Migration 2026-11-28-019: which event types the enabled endpoints take, kept in
// `webhook_subscriptions` by triggers on every write of an endpoint (the API's, the
// command line's, a shell's on the database), so that a pet's or a category's event
// trigger asks one index rather than reading every endpoint. Filled from the previous
// release's endpoints; then followed through each kind of change, written as another
// process would write it; and the mark it gives events (fan_out_pending) is exact: an
// event is marked while an enabled endpoint takes its type, and only then.
import { after, before, beforeEach, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { sql, type Kysely } from 'kysely'
import { DIALECTS } from './helpers/dialects.js'
import { upgradeFrom, type UpgradedDatabase } from './helpers/previous-release.js'
import { needs } from './helpers/services.js'

/** The last migration released before this one. */
const PREVIOUS_RELEASE = '2026-11-28-018-order-events-own-endpoints'

for (const { dialect, create } of DIALECTS) {
  describe(`the event types enabled endpoints take (${dialect})`, async () => {
    if (dialect === 'postgres' && !(await needs('postgres', 'the PostgreSQL webhook subscriptions'))) return

    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tables as the test reads them, not the store's types
    let db: Kysely<any>
    let upgraded: UpgradedDatabase | undefined
    let account = 0
    const made = { everything: 0, two: 0, disabled: 0 }

    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    const endpoint = async (on: Kysely<any>, enabledEvents: string, disabledAt: number | null = null) =>
      Number(
        (
          await on
            .insertInto('webhook_endpoints')
            .values({ account_id: account, url: 'https://example.com/hook', description: '', enabled_events: enabledEvents, secret: 'sealed', created_at: 0, disabled_at: disabledAt })
            .returning('id')
            .executeTakeFirstOrThrow()
        ).id,
      )

    before(async () => {
      upgraded = await upgradeFrom(create, PREVIOUS_RELEASE, async (old) => {
        account = Number((await old.insertInto('accounts').values({ name: 'hooks', plan: 'pro', created_at: 0 }).returning('id').executeTakeFirstOrThrow()).id)
        made.everything = await endpoint(old, '*')
        made.two = await endpoint(old, 'order.placed pet.created')
        made.disabled = await endpoint(old, 'pet.deleted', 1)
      })
      db = upgraded.handle.db
    })
    after(() => upgraded?.close())

    const subscriptions = async () =>
      (await db.selectFrom('webhook_subscriptions').select(['endpoint_id', 'type']).orderBy('endpoint_id').orderBy('type').execute()).map((row) => [Number(row.endpoint_id), row.type])

    it("holds a row for each type each enabled endpoint of the previous release takes, and none for a disabled one's", async () => {
      assert.deepEqual(await subscriptions(), [
        [made.everything, '*'],
        [made.two, 'order.placed'],
        [made.two, 'pet.created'],
      ])
    })

    it('follows every write of an endpoint, whoever makes it: created, its types changed, disabled, enabled, deleted', async () => {
      const created = await endpoint(db, 'category.created pet.updated')
      assert.deepEqual((await subscriptions()).filter(([id]) => id === created), [
        [created, 'category.created'],
        [created, 'pet.updated'],
      ])
      await db.updateTable('webhook_endpoints').set({ enabled_events: 'pet.deleted' }).where('id', '=', created).execute()
      assert.deepEqual((await subscriptions()).filter(([id]) => id === created), [[created, 'pet.deleted']])
      await db.updateTable('webhook_endpoints').set({ disabled_at: 5 }).where('id', '=', created).execute()
      assert.deepEqual((await subscriptions()).filter(([id]) => id === created), [], 'disabled')
      await db.updateTable('webhook_endpoints').set({ failing_since: 7 }).where('id', '=', created).execute()
      assert.deepEqual((await subscriptions()).filter(([id]) => id === created), [], 'another column written: still disabled')
      await db.updateTable('webhook_endpoints').set({ disabled_at: null }).where('id', '=', created).execute()
      assert.deepEqual((await subscriptions()).filter(([id]) => id === created), [[created, 'pet.deleted']], 'enabled again')
      await db.deleteFrom('webhook_endpoints').where('id', '=', created).execute()
      assert.deepEqual((await subscriptions()).filter(([id]) => id === created), [], 'deleted')
    })

    describe('marks an event for fan-out while an enabled endpoint takes its type, and only then', () => {
      beforeEach(async () => {
        await db.deleteFrom('webhook_endpoints').execute()
      })
      /** Whether the last event written is marked for fan-out. */
      const marked = async () => Number((await db.selectFrom('events').select('fan_out_pending').orderBy('id', 'desc').limit(1).executeTakeFirstOrThrow()).fan_out_pending) === 1
      const category = async () => Number((await db.selectFrom('categories').select('id').orderBy('id').limit(1).executeTakeFirstOrThrow()).id)
      const newPet = async () => {
        const { id } = await db.insertInto('pets').values({ name: 'Marked', category_id: await category(), status: 'available', created_at: 0 }).returning('id').executeTakeFirstOrThrow()
        return Number(id)
      }

      it('a pet created, changed and deleted', async () => {
        await endpoint(db, 'order.placed')
        const pet = await newPet()
        assert.equal(await marked(), false, 'no endpoint takes pet.created')
        await endpoint(db, 'pet.created')
        await newPet()
        assert.equal(await marked(), true)
        await db.updateTable('pets').set({ status: 'pending' }).where('id', '=', pet).execute()
        assert.equal(await marked(), false, 'none takes pet.updated')
        await endpoint(db, 'pet.deleted', 3)
        await db.deleteFrom('pets').where('id', '=', pet).execute()
        assert.equal(await marked(), false, 'the one that takes pet.deleted is disabled')
      })

      it('a category, to an endpoint that takes every type', async () => {
        const everything = await endpoint(db, '*')
        await db.insertInto('categories').values({ name: 'Marked', name_key: 'marked', created_at: 0 }).execute()
        assert.equal(await marked(), true)
        await db.updateTable('webhook_endpoints').set({ disabled_at: 9 }).where('id', '=', everything).execute()
        await db.updateTable('categories').set({ description: 'changed' }).where('name_key', '=', 'marked').execute()
        assert.equal(await marked(), false)
        await db.deleteFrom('categories').where('name_key', '=', 'marked').execute()
        assert.equal(await marked(), false)
      })

      it('several pets in one statement, as the group commit writes them', async () => {
        await endpoint(db, 'pet.created')
        const before = Number((await sql<{ n: number }>`select count(*) as n from events`.execute(db)).rows[0]!.n)
        const id = await category()
        await db.insertInto('pets').values([1, 2, 3].map((i) => ({ name: `Batch ${i}`, category_id: id, status: 'available', created_at: 0 }))).execute()
        const written = await db.selectFrom('events').select('fan_out_pending').orderBy('id', 'desc').limit(3).execute()
        assert.deepEqual(written.map((row) => Number(row.fan_out_pending)), [1, 1, 1])
        assert.equal(Number((await sql<{ n: number }>`select count(*) as n from events`.execute(db)).rows[0]!.n), before + 3)
      })
    })
  })
}
