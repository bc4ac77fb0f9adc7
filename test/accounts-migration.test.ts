// Migration 2026-11-25-009-accounts over data the previous release wrote: a database
// migrated up to 008 and filled through the old schema (keys with plans, a roll, rows
// owned by keys), then the rest of the migrations as the store applies them when it
// opens. Every key becomes an account of its own numbered as the key, a chain of rolls
// one account (the first key's id and name, the newest key's plan); what the keys
// owned is the account's; the rewritten event triggers write account_id.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import type { DatabaseHandle } from './helpers/database.js'
import type { Store } from '../src/db/store.js'
import { DIALECTS } from './helpers/dialects.js'
import { upgradeFrom, type UpgradedDatabase } from './helpers/previous-release.js'
import { needs } from './helpers/services.js'
import { insertPet } from './helpers/pets.js'

/** The last migration of the previous release. */
const PREVIOUS_RELEASE = '2026-11-25-008-notify-once-at-a-time'
const NOW = Date.UTC(2026, 10, 25, 12)
const HOUR = Date.UTC(2026, 10, 25, 9)
const DAY = 86_400_000

type Row = Record<string, unknown>
const byId = (a: Row, b: Row) => Number(a.id) - Number(b.id)

for (const { dialect, create } of DIALECTS) {
  describe(`accounts migration of the previous release's data (${dialect})`, async () => {
    if (dialect === 'postgres' && !(await needs('postgres', 'the PostgreSQL accounts migration'))) return

    let store: Store
    let handle: DatabaseHandle
    /** The keys as the previous release numbered them: key 2 was rolled to key 3. */
    const key = { 1: 0, 2: 0, 3: 0 }
    /** Each key's account as the migration is to make it. */
    const accountOf = new Map<number, number>()
    const pet: number[] = []
    /** Rows as the previous release held them, read before the migration. */
    const previous: Record<'orders' | 'events' | 'webhook_endpoints' | 'idempotency_keys' | 'api_key_usage', Row[]> = {
      orders: [],
      events: [],
      webhook_endpoints: [],
      idempotency_keys: [],
      api_key_usage: [],
    }

    let upgraded: UpgradedDatabase | undefined
    before(async () => {
      // The previous release: plan on api_keys, api_key_id owners. The store applies 009 and anything after it.
      ;({ store, handle } = upgraded = await upgradeFrom(create, PREVIOUS_RELEASE, fillAsThePreviousRelease))
    })
    after(() => upgraded?.close())

    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
    async function fillAsThePreviousRelease(db: Kysely<any>): Promise<void> {
      const insertKey = async (values: Row) =>
        (await db.insertInto('api_keys').values({ prefix: `ps_test_${String(values.name)}`, key_hash: `hash of ${String(values.name)}`, ...values }).returning('id').executeTakeFirstOrThrow())
          .id as number
      key[1] = await insertKey({ name: 'operator', plan: 'enterprise', per_minute: 600, per_day: 250_000, created_at: NOW - 30 * DAY, last_used_at: NOW - DAY })
      key[2] = await insertKey({ name: 'ci', plan: 'free', created_at: NOW - 20 * DAY, counter_identity: null })
      // The roll: key 3 shares key 2's rate-limit identity, key 2 ends after its grace period; key 3 was upgraded since.
      key[3] = await insertKey({ name: 'ci (rolled)', plan: 'pro', created_at: NOW - 10 * DAY, counter_identity: `key:${2}` })
      await db.updateTable('api_keys').set({ replaced_by: key[3], expires_at: NOW - 9 * DAY }).where('id', '=', key[2]).execute()
      assert.deepEqual(key, { 1: 1, 2: 2, 3: 3 }, 'a fresh database numbers the keys from 1')
      accountOf.set(key[1], key[1]).set(key[2], key[2]).set(key[3], key[2])

      // Pets: the count and event triggers of the previous release run.
      for (const [i, status] of (['pending', 'pending', 'pending', 'sold', 'available', 'available'] as const).entries()) {
        const row = await db.insertInto('pets').values({ name: `old ${i}`, category_id: 1, status, created_at: NOW - 40 * DAY }).returning('id').executeTakeFirstOrThrow()
        pet.push(row.id as number)
      }

      // An endpoint of key 2 taking every event: order events of its keys are then marked for fan-out.
      await db
        .insertInto('webhook_endpoints')
        .values({ api_key_id: key[2], url: 'https://example.com/hook', description: 'ci', enabled_events: '*', secret: 'whsec_old', created_at: NOW - 15 * DAY })
        .execute()

      // Orders of each key; each insert fires the trigger that writes an order event owned by the key.
      const order = (petId: number, owner: number, status: string, closedAt: number | null, placedAt: number) =>
        db.insertInto('orders').values({ pet_id: petId, api_key_id: owner, status, placed_at: placedAt, closed_at: closedAt }).execute()
      await order(pet[0]!, key[1], 'placed', null, NOW - 25 * DAY)
      await order(pet[1]!, key[2], 'placed', null, NOW - 14 * DAY)
      await order(pet[2]!, key[3], 'placed', null, NOW - 8 * DAY)
      await order(pet[3]!, key[3], 'placed', null, NOW - 7 * DAY)
      // …and a status change, which fires the update trigger's event.
      await db.updateTable('orders').set({ status: 'completed', closed_at: NOW - 5 * DAY }).where('pet_id', '=', pet[3]!).where('status', '=', 'placed').execute()

      // Idempotency-Key records: keys 2 and 3 (one chain) used the same one; key 3 another; key 1 the same one too.
      const record = (owner: number, idempotencyKey: string, createdAt: number) =>
        db
          .insertInto('idempotency_keys')
          .values({
            api_key_id: owner,
            idempotency_key: idempotencyKey,
            fingerprint: `fingerprint of key ${owner}`,
            locked_until: null,
            response_status: 201,
            response_body: JSON.stringify({ by: owner }),
            created_at: createdAt,
            expires_at: NOW + DAY,
          })
          .execute()
      await record(key[2], 'same-key', NOW - 2 * 3_600_000)
      await record(key[3], 'same-key', NOW - 3_600_000)
      await record(key[3], 'other-key', NOW - 3_600_000)
      await record(key[1], 'same-key', NOW - 3_600_000)

      // Usage, by key.
      await db
        .insertInto('api_key_usage')
        .values([
          { api_key_id: key[1], hour: HOUR, outcome: 'ok', requests: 100 },
          { api_key_id: key[2], hour: HOUR, outcome: 'ok', requests: 5 },
          { api_key_id: key[2], hour: HOUR, outcome: 'rate_limited', requests: 1 },
          { api_key_id: key[3], hour: HOUR, outcome: 'ok', requests: 7 },
          { api_key_id: key[3], hour: HOUR + 3_600_000, outcome: 'forbidden', requests: 2 },
        ])
        .execute()

      for (const table of Object.keys(previous) as (keyof typeof previous)[]) {
        previous[table] = (await db.selectFrom(table).selectAll().execute()) as Row[]
        if (table !== 'api_key_usage' && table !== 'idempotency_keys') previous[table].sort(byId)
      }
      // The fixture is what it says it is.
      assert.equal(previous.orders.length, 4)
      assert.deepEqual(
        previous.events.filter((event) => event.api_key_id !== null).map((event) => [event.type, event.api_key_id]),
        [
          ['order.placed', key[1]],
          ['order.placed', key[2]],
          ['order.placed', key[3]],
          ['order.placed', key[3]],
          ['order.completed', key[3]],
        ],
      )
      assert.ok(previous.events.some((event) => event.api_key_id === null && event.type === 'pet.created'))
    }

    it('makes one account per key, and one per chain of rolls: the first key’s id, name and creation, the newest key’s plan', async () => {
      const accounts = await handle.db.selectFrom('accounts').selectAll().orderBy('id').execute()
      assert.deepEqual(accounts, [
        { id: key[1], name: 'operator', plan: 'enterprise', per_minute: 600, per_day: 250_000, created_at: NOW - 30 * DAY, disabled_at: null },
        { id: key[2], name: 'ci', plan: 'pro', per_minute: null, per_day: null, created_at: NOW - 20 * DAY, disabled_at: null },
      ])
      assert.equal(await store.accounts.findById(key[3]), undefined, 'no account for the key a roll made')
      assert.deepEqual(await store.accounts.findById(key[2]), { id: key[2], name: 'ci', plan: 'pro', custom: null, createdAt: NOW - 20 * DAY, disabledAt: null })
      assert.deepEqual((await store.accounts.findById(key[1]))?.custom, { perMinute: 600, perDay: 250_000 })
    })

    it('puts each key in its account and keeps what is the key’s own', async () => {
      const keys = await handle.db.selectFrom('api_keys').selectAll().orderBy('id').execute()
      assert.deepEqual(
        keys.map((k) => [k.id, k.account_id, k.name, k.created_by, k.replaced_by, k.expires_at]),
        [
          [key[1], key[1], 'operator', null, null, null],
          [key[2], key[2], 'ci', null, key[3], NOW - 9 * DAY],
          [key[3], key[2], 'ci (rolled)', null, null, null],
        ],
      )
      for (const column of ['plan', 'per_minute', 'per_day', 'counter_identity']) {
        assert.ok(!(column in keys[0]!), `api_keys.${column} is gone`)
      }
      assert.equal((await store.apiKeys.findById(key[3]))?.account.plan, 'pro')
      assert.equal((await store.apiKeys.findById(key[2]))?.account.id, key[2])
      assert.deepEqual((await store.apiKeys.page(key[2], 0, 10)).map((k) => k.id), [key[2], key[3]])
    })

    it('keeps every order, event and endpoint, owned by the account of the key that owned it', async () => {
      for (const table of ['orders', 'events', 'webhook_endpoints'] as const) {
        const now = ((await handle.db.selectFrom(table).selectAll().execute()) as Row[]).sort(byId)
        assert.equal(now.length, previous[table].length, `every row of ${table} is kept`)
        assert.deepEqual(
          now.map(({ account_id, ...rest }) => ({ ...rest, api_key_id: account_id })),
          previous[table].sort(byId).map((row) => ({ ...row, api_key_id: row.api_key_id === null ? null : accountOf.get(row.api_key_id as number) })),
          `${table}: account_id is the key's account, every other column as it was`,
        )
      }
      const owners = async (table: 'orders' | 'events' | 'webhook_endpoints') =>
        (await handle.db.selectFrom(table).select('account_id').orderBy('id').execute()).map((row) => row.account_id)
      assert.deepEqual(await owners('orders'), [key[1], key[2], key[2], key[2]])
      assert.deepEqual(await owners('webhook_endpoints'), [key[2]])
      assert.deepEqual((await owners('events')).filter((owner) => owner !== null), [key[1], key[2], key[2], key[2], key[2]])
    })

    it('keeps the earlier key’s record of an Idempotency-Key two keys of one chain used, and every other record', async () => {
      const records = await handle.db.selectFrom('idempotency_keys').selectAll().orderBy('account_id').orderBy('idempotency_key').execute()
      assert.deepEqual(
        records.map((r) => [r.account_id, r.idempotency_key, r.fingerprint, r.response_body]),
        [
          [key[1], 'same-key', `fingerprint of key ${key[1]}`, JSON.stringify({ by: key[1] })],
          [key[2], 'other-key', `fingerprint of key ${key[3]}`, JSON.stringify({ by: key[3] })],
          [key[2], 'same-key', `fingerprint of key ${key[2]}`, JSON.stringify({ by: key[2] })],
        ],
      )
      // Through the store: the account replays key 2's response, and key 3's body is another request.
      const options = (fingerprint: string) => ({ fingerprint, now: NOW, ttlMs: DAY, leaseMs: 60_000 })
      assert.deepEqual(await store.idempotency.claim({ accountId: key[2], key: 'same-key' }, options(`fingerprint of key ${key[2]}`)), {
        outcome: 'replay',
        response: { status: 201, body: { by: key[2] } },
      })
      assert.deepEqual(await store.idempotency.claim({ accountId: key[2], key: 'same-key' }, options(`fingerprint of key ${key[3]}`)), { outcome: 'mismatch' })
    })

    it('keeps usage by key, and sums an account’s keys', async () => {
      const rows = (await handle.db.selectFrom('api_key_usage').selectAll().execute()) as Row[]
      const order = (a: Row, b: Row) => Number(a.api_key_id) - Number(b.api_key_id) || Number(a.hour) - Number(b.hour) || String(a.outcome).localeCompare(String(b.outcome))
      assert.deepEqual(rows.sort(order), previous.api_key_usage.sort(order))
      assert.deepEqual(await store.usage.history({ accountId: key[2] }, HOUR, HOUR + 2 * 3_600_000), [
        { hour: HOUR, outcome: 'ok', requests: 12 },
        { hour: HOUR, outcome: 'rate_limited', requests: 1 },
        { hour: HOUR + 3_600_000, outcome: 'forbidden', requests: 2 },
      ])
      assert.deepEqual(await store.usage.history({ accountId: key[2], keyId: key[3] }, HOUR, HOUR + 2 * 3_600_000), [
        { hour: HOUR, outcome: 'ok', requests: 7 },
        { hour: HOUR + 3_600_000, outcome: 'forbidden', requests: 2 },
      ])
      assert.deepEqual(await store.usage.history({ accountId: key[1] }, HOUR, HOUR + 2 * 3_600_000), [{ hour: HOUR, outcome: 'ok', requests: 100 }])
    })

    it('shows the account the orders and endpoints of all its keys', async () => {
      const orders = await store.orders.list({ accountId: key[2], afterId: 0, limit: 10 })
      assert.deepEqual(
        orders.map((o) => [o.petId, o.status]),
        [
          [pet[1], 'placed'],
          [pet[2], 'placed'],
          [pet[3], 'completed'],
        ],
      )
      assert.deepEqual((await store.orders.list({ accountId: key[1], afterId: 0, limit: 10 })).map((o) => o.petId), [pet[0]])
      assert.deepEqual(await store.orders.list({ accountId: key[3], afterId: 0, limit: 10 }), [])
      assert.ok(await store.orders.find(orders[1]!.id, key[2]), 'an order key 3 placed is the account’s')

      const endpoints = await store.webhookEndpoints.endpoints(key[2])
      assert.deepEqual(
        endpoints.map((e) => [e.accountId, e.url, e.enabledEvents]),
        [[key[2], 'https://example.com/hook', '*']],
      )
      assert.deepEqual(await store.webhookEndpoints.endpoints(key[1]), [])

      const events = await store.webhookEndpoints.events({ accountId: key[2], limit: 50 })
      assert.deepEqual(
        events.filter((e) => e.accountId !== null).map((e) => [e.type, e.accountId]),
        [
          ['order.completed', key[2]],
          ['order.placed', key[2]],
          ['order.placed', key[2]],
          ['order.placed', key[2]],
        ],
      )
    })

    it('writes account_id in the events of orders placed after the migration (the triggers were rewritten)', async () => {
      const placed = await store.orders.place(pet[4]!, key[2], NOW)
      assert.equal(placed.outcome, 'placed')
      const orderId = placed.outcome === 'placed' ? placed.order.id : 0
      assert.ok(orderId > Math.max(...previous.orders.map((o) => Number(o.id))))
      const lastOf = (type: string) => handle.db.selectFrom('events').selectAll().where('type', '=', type).orderBy('id', 'desc').executeTakeFirstOrThrow()
      const last = await lastOf('order.placed')
      assert.ok(last.id > Math.max(...previous.events.map((e) => Number(e.id))), 'an event of the new order')
      assert.equal(last.account_id, key[2])
      assert.equal(last.fan_out_pending, 1, 'the account’s endpoint takes it')
      const data = JSON.parse(last.data) as Row
      assert.equal(data.id, orderId)
      assert.equal(data.account_id, key[2])

      const closed = await store.orders.close(orderId, key[2], 'cancelled', NOW + 1)
      assert.equal(closed.outcome, 'closed')
      const cancelled = await lastOf('order.cancelled')
      assert.deepEqual([cancelled.type, cancelled.account_id, cancelled.fan_out_pending], ['order.cancelled', key[2], 1])

      // A pet event still has no owner, and still goes to the endpoint.
      const newPet = await insertPet(store.pets, { name: 'new', categoryId: 1 }, NOW)
      const created = await lastOf('pet.created')
      assert.deepEqual([created.type, created.account_id, created.fan_out_pending, (JSON.parse(created.data) as Row).id], ['pet.created', null, 1, newPet.id])
    })

    it('numbers an account made after the migration above every account there was', async () => {
      const stored = await store.apiKeys.insert(
        { name: 'new', prefix: 'ps_test_New0', hash: 'hash of new', scopes: 'pets:read', expiresAt: null, disabledAt: null, createdBy: null, account: { name: 'new account', plan: 'free', custom: null } },
        NOW,
      )
      assert.ok(stored.account.id > key[2], `account ${stored.account.id} is above every account of the previous release`)
      assert.ok(stored.id > key[3], `key ${stored.id} is above every key of the previous release`)
      assert.equal(stored.account.name, 'new account')
      assert.deepEqual((await store.accounts.page(0, 10)).map((a) => a.id), [key[1], key[2], stored.account.id])
      // And another, to see the numbering go on.
      const next = await store.apiKeys.insert(
        { name: 'next', prefix: 'ps_test_Nxt0', hash: 'hash of next', scopes: 'pets:read', expiresAt: null, disabledAt: null, createdBy: null, account: { name: 'next', plan: 'free', custom: null } },
        NOW,
      )
      assert.ok(next.account.id > stored.account.id)
    })
  })
}
