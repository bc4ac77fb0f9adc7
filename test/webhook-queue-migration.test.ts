// Migration 2026-11-25-012-webhook-queue over data the previous release wrote: a
// database migrated up to 009 and filled through that schema, with what it could
// leave behind (deliveries and attempts of a deleted endpoint, an attempt of a deleted
// delivery, a scheduled delivery made twice), then the rest of the migrations as the
// store applies them when it opens. The strays go, the double is merged (its attempts
// kept), ids are kept; afterwards the foreign keys refuse a stray and cascade an
// endpoint's deletion, the partial unique index refuses a second scheduled delivery,
// and the indexes the claims and the purge use exist.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { sql, type Kysely } from 'kysely'
import type { DatabaseHandle } from './helpers/database.js'
import type { Store } from '../src/db/store.js'
import { DIALECTS } from './helpers/dialects.js'
import { upgradeFrom, type UpgradedDatabase } from './helpers/previous-release.js'
import { needs } from './helpers/services.js'
import { LISTED_EVENT_TYPES } from '../src/vocabulary/event-types.js'

/** The last migration released before this one. */
const PREVIOUS_RELEASE = '2026-11-25-009-accounts'
const NOW = Date.UTC(2026, 10, 25, 12)

type Row = Record<string, unknown>
const ids = (rows: Row[]) => rows.map((row) => Number(row.id)).sort((a, b) => a - b)

for (const { dialect, create } of DIALECTS) {
  describe(`webhook queue migration of the previous release's data (${dialect})`, async () => {
    if (dialect === 'postgres' && !(await needs('postgres', 'the PostgreSQL webhook queue migration'))) return

    let store: Store
    let handle: DatabaseHandle
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tables as the test reads them, not the store's types
    let db: Kysely<any>
    const made = { account: 0, endpoint: 0, deleted: 0, event: [0, 0], delivered: 0, twin: 0, manual: [0, 0], strayDelivery: 0, attempt: [0, 0, 0, 0] }

    let upgraded: UpgradedDatabase | undefined
    before(async () => {
      // The store applies 012 and anything after it.
      ;({ store, handle } = upgraded = await upgradeFrom(create, PREVIOUS_RELEASE, fillAsThePreviousRelease))
      db = handle.db
    })
    after(() => upgraded?.close())

    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async function fillAsThePreviousRelease(old: Kysely<any>): Promise<void> {
      const insert = async (table: string, values: Row) => Number((await old.insertInto(table).values(values).returning('id').executeTakeFirstOrThrow()).id)
      made.account = await insert('accounts', { name: 'tenant', plan: 'free', created_at: NOW })
      const endpoint = () => insert('webhook_endpoints', { account_id: made.account, url: 'https://example.com/hook', description: '', enabled_events: '*', secret: 'whsec_old', created_at: NOW })
      made.endpoint = await endpoint()
      made.deleted = await endpoint()
      for (const i of [0, 1]) made.event[i] = await insert('events', { type: 'pet.created', account_id: null, data: '{}', created_at: NOW })
      const delivery = (endpointId: number, eventId: number, trigger: string, status = 'pending') =>
        insert('webhook_deliveries', { endpoint_id: endpointId, event_id: eventId, status, attempts: 1, next_attempt_at: NOW, trigger, created_at: NOW })
      const attempt = (deliveryId: number, endpointId: number, eventId: number) =>
        insert('webhook_attempts', { delivery_id: deliveryId, endpoint_id: endpointId, event_id: eventId, trigger: 'scheduled', at: NOW, duration_ms: 5, response_status: 500, error: null })
      made.delivered = await delivery(made.endpoint, made.event[0]!, 'scheduled', 'delivered')
      // Two dispatchers fanned the same event out: a second scheduled delivery, with an attempt of its own.
      made.twin = await delivery(made.endpoint, made.event[0]!, 'scheduled')
      // Redelivered twice: manual deliveries may repeat.
      made.manual = [await delivery(made.endpoint, made.event[1]!, 'manual'), await delivery(made.endpoint, made.event[1]!, 'manual')]
      // The deleted endpoint's delivered one stayed behind, with its attempt; then the endpoint row went.
      made.strayDelivery = await delivery(made.deleted, made.event[1]!, 'scheduled', 'delivered')
      made.attempt = [
        await attempt(made.delivered, made.endpoint, made.event[0]!),
        await attempt(made.twin, made.endpoint, made.event[0]!),
        await attempt(made.strayDelivery, made.deleted, made.event[1]!),
        // …and a pending delivery deleted with its endpoint left its attempt.
        await attempt(987_654, made.endpoint, made.event[1]!),
      ]
      await old.deleteFrom('webhook_endpoints').where('id', '=', made.deleted).execute()
    }

    it('deletes what no foreign key would accept, merges a doubled scheduled delivery, and keeps the ids', async () => {
      const deliveries = await db.selectFrom('webhook_deliveries').selectAll().execute()
      assert.deepEqual(ids(deliveries), [made.delivered, ...made.manual].sort((a, b) => a - b))
      const attempts = await db.selectFrom('webhook_attempts').selectAll().orderBy('id').execute()
      assert.deepEqual(
        attempts.map((row) => [Number(row.id), Number(row.delivery_id)]),
        [
          [made.attempt[0], made.delivered],
          [made.attempt[1], made.delivered],
        ],
        "the twin's attempt now belongs to the delivery kept",
      )
      // New rows are numbered after the old ones.
      const next = await store.webhookEndpoints.redeliver(made.account, made.event[0]!, LISTED_EVENT_TYPES, NOW)
      assert.deepEqual(next, { deliveries: 1, type: 'pet.created' })
      const newest = await db.selectFrom('webhook_deliveries').select('id').orderBy('id', 'desc').executeTakeFirstOrThrow()
      assert.ok(Number(newest.id) > made.strayDelivery)
    })

    it('refuses a delivery or attempt of a missing endpoint, event or delivery', async () => {
      const delivery = (values: Row) =>
        db.insertInto('webhook_deliveries').values({ status: 'pending', attempts: 0, next_attempt_at: NOW, trigger: 'manual', created_at: NOW, ...values }).execute()
      await assert.rejects(delivery({ endpoint_id: 123_456, event_id: made.event[0] }), /foreign key/i)
      await assert.rejects(delivery({ endpoint_id: made.endpoint, event_id: 123_456 }), /foreign key/i)
      await assert.rejects(
        db.insertInto('webhook_attempts').values({ delivery_id: 123_456, endpoint_id: made.endpoint, event_id: made.event[0], trigger: 'manual', at: NOW, duration_ms: 1 }).execute(),
        /foreign key/i,
      )
    })

    it('takes one scheduled delivery per endpoint and event, and any number of manual ones', async () => {
      const again = (trigger: string) =>
        db.insertInto('webhook_deliveries').values({ endpoint_id: made.endpoint, event_id: made.event[0], status: 'pending', attempts: 0, next_attempt_at: NOW, trigger, created_at: NOW }).execute()
      await assert.rejects(again('scheduled'), /unique|duplicate/i)
      await again('manual')
    })

    it('has the indexes the claims and the purge use', async () => {
      const names =
        dialect === 'sqlite'
          ? (await sql<{ name: string }>`select name from sqlite_master where type = 'index'`.execute(db)).rows.map((row) => row.name)
          : (await sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = current_schema()`.execute(db)).rows.map((row) => row.name)
      for (const index of [
        'webhook_deliveries_scheduled_once',
        'webhook_deliveries_pending_due',
        'webhook_deliveries_leased',
        'webhook_deliveries_event',
        'webhook_deliveries_endpoint',
        'webhook_attempts_event',
        'webhook_attempts_delivery',
        'webhook_attempts_endpoint',
      ]) {
        assert.ok(names.includes(index), `${index} in ${names.join(', ')}`)
      }
      if (dialect === 'sqlite') {
        // The claim's scan of due deliveries uses the partial index, not the whole table.
        const plan = (await sql<{ detail: string }>`explain query plan select id from webhook_deliveries where status = 'pending' and next_attempt_at <= ${NOW} order by next_attempt_at, id limit 20`.execute(db)).rows
        assert.ok(plan.some((step) => step.detail.includes('webhook_deliveries_pending_due')), JSON.stringify(plan))
      }
    })

    it("deletes an endpoint's deliveries and their attempts with it", async () => {
      assert.equal(await store.webhookEndpoints.deleteEndpoint(made.account, made.endpoint), true)
      assert.deepEqual(await db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', made.endpoint).execute(), [])
      assert.deepEqual(await db.selectFrom('webhook_attempts').selectAll().execute(), [])
    })
  })
}
