// The webhook endpoints store (webhook-endpoints-store.ts), written once in Kysely for
// both databases.
import { sql, type Kysely, type Selectable } from 'kysely'
import type { Dialect } from '../dialect.js'
import type { Database, WebhookAttemptsTable } from '../schema.js'
import type { StoredAttempt, WebhookEndpointsStore } from '../webhook-endpoints-store.js'
import { completeClaimIn } from './idempotency-claims.js'
import { deleteInBatches } from './in-batches.js'
import { ENDPOINT_COLUMNS, redeliveredTo, toEndpoint, toEvent } from './webhook-rows.js'
import { LISTED_EVENT_TYPES } from '../../vocabulary/event-types.js'

/** Rows of an endpoint's history one statement of its deletion removes: a few milliseconds on SQLite. */
const DELETE_BATCH = 1_000


export function createWebhookEndpointsStore(db: Kysely<Database>, dialect: Dialect): WebhookEndpointsStore {
  return {
    async events({ accountId, types = LISTED_EVENT_TYPES, beforeId, limit }) {
      // The newest `limit` of the account's events and the public ones (no account): each
      // (owner, type) read apart, from its newest end, at most `limit` ids from each
      // (migration 016's indexes), and the newest `limit` of those. A page reads at most
      // 2 × types × limit index entries however many events there are, where one
      // condition `account_id = ? or account_id is null` read every public event.
      const newest = (owner: 'account' | 'public', eventType: string) =>
        db
          .selectFrom('events')
          .select('id')
          .where(owner === 'public' ? (eb) => eb('account_id', 'is', null) : (eb) => eb('account_id', '=', accountId))
          .where('type', '=', eventType)
          .$if(beforeId !== undefined, (query) => query.where('id', '<', beforeId!))
          .orderBy('id', 'desc')
          .limit(limit)
      // Wrapped each, as SQLite takes ORDER BY and LIMIT only at the end of a compound select.
      if (types.length === 0) return []
      const ranges = types.flatMap((eventType) => [
        db.selectFrom(newest('account', eventType).as('newest')).select('id'),
        db.selectFrom(newest('public', eventType).as('newest')).select('id'),
      ])
      const ids = ranges.slice(1).reduce((all, range) => all.unionAll(range), ranges[0]!)
      // The newest `limit` of those ids. PostgreSQL merges the ranges in id order (Merge
      // Append) and stops at `limit`. SQLite would sort each range to merge them (0.9 ms a
      // page, 0.15 ms so): it walks an IN list in id order instead, and stops at `limit`.
      const page =
        dialect === 'postgres'
          ? db.selectFrom('events').selectAll().where('id', 'in', db.selectFrom(ids.as('ranges')).select('id').orderBy('id', 'desc').limit(limit))
          : db.selectFrom('events').selectAll().where('id', 'in', ids).limit(limit)
      return (await page.orderBy('id', 'desc').execute()).map(toEvent)
    },

    async insertEndpoint(endpoint, now, limit = Infinity, completion) {
      return db.transaction().execute(async (trx) => {
        if (Number.isFinite(limit)) {
          // PostgreSQL: the account's row locked, so two inserts count one after the other (SQLite's writer is alone already).
          if (dialect === 'postgres') await trx.selectFrom('accounts').select('id').where('id', '=', endpoint.accountId).forUpdate().execute()
          const { count } = await trx.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<number>().as('count')).where('account_id', '=', endpoint.accountId).executeTakeFirstOrThrow()
          if (Number(count) >= limit) return undefined
        }
        const row = await trx
        .insertInto('webhook_endpoints')
        .values({
          account_id: endpoint.accountId,
          url: endpoint.url,
          description: endpoint.description,
          enabled_events: endpoint.enabledEvents,
          secret: endpoint.secret,
          created_at: now,
        })
        .returning(ENDPOINT_COLUMNS)
        .executeTakeFirstOrThrow()
        const stored = toEndpoint(row)
        if (completion) await completeClaimIn(trx, completion, stored)
        return stored
      })
    },

    async endpoints(accountId) {
      return (await db.selectFrom('webhook_endpoints').select(ENDPOINT_COLUMNS).where('account_id', '=', accountId).orderBy('id').execute()).map(toEndpoint)
    },

    async endpoint(accountId, id) {
      const row = await db.selectFrom('webhook_endpoints').select(ENDPOINT_COLUMNS).where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
      return row && toEndpoint(row)
    },

    async updateEndpoint(accountId, id, changes, onlyIf) {
      const row = await db
        .updateTable('webhook_endpoints')
        .set({
          ...(changes.url === undefined ? {} : { url: changes.url }),
          ...(changes.description === undefined ? {} : { description: changes.description }),
          ...(changes.enabledEvents === undefined ? {} : { enabled_events: changes.enabledEvents }),
          ...(changes.disabledAt === undefined ? {} : { disabled_at: changes.disabledAt, failing_since: null }),
        })
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .$if(onlyIf !== undefined, (query) => query.where('enabled_events', '=', onlyIf!.enabledEvents))
        .returning(ENDPOINT_COLUMNS)
        .executeTakeFirst()
      return row && toEndpoint(row)
    },

    async rotateSecret(accountId, id, secret, previousUntil, onlyIf) {
      const row = await db
        .updateTable('webhook_endpoints')
        .set((eb) => ({ previous_secret: eb.ref('secret'), previous_secret_until: previousUntil, secret }))
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .$if(onlyIf !== undefined, (query) => query.where('enabled_events', '=', onlyIf!.enabledEvents))
        .returning(ENDPOINT_COLUMNS)
        .executeTakeFirst()
      return row && toEndpoint(row)
    },

    async secrets(afterId, limit) {
      const rows = await db.selectFrom('webhook_endpoints').select(['id', 'secret', 'previous_secret']).where('id', '>', afterId).orderBy('id').limit(limit).execute()
      return rows.map((row) => ({ id: row.id, secret: row.secret, previousSecret: row.previous_secret }))
    },

    async replaceSecrets(id, from, to) {
      const result = await db
        .updateTable('webhook_endpoints')
        .set({ secret: to.secret, previous_secret: to.previousSecret })
        .where('id', '=', id)
        .where('secret', '=', from.secret)
        .where((eb) => (from.previousSecret === null ? eb('previous_secret', 'is', null) : eb('previous_secret', '=', from.previousSecret)))
        .executeTakeFirst()
      return result.numUpdatedRows > 0n
    },

    async deleteEndpoint(accountId, id) {
      // Its history first, its attempts then its deliveries (every event it took for 30
      // days: millions, at a steady rate), in batches (in-batches.ts): one statement held
      // SQLite's writer, and so every request of every tenant, for 186 ms at 25,000
      // deliveries, and PostgreSQL's locks for 120. The endpoint goes last, with what was
      // made meanwhile (on delete cascade, migration 2026-11-25-012).
      const owned = await db.selectFrom('webhook_endpoints').select('id').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
      if (!owned) return false
      for (const table of ['webhook_attempts', 'webhook_deliveries'] as const) {
        await deleteInBatches(DELETE_BATCH, async (limit) => {
          const batch = await db.deleteFrom(table).where('id', 'in', (eb) => eb.selectFrom(table).select('id').where('endpoint_id', '=', id).orderBy('id').limit(limit)).executeTakeFirst()
          return batch.numDeletedRows
        })
      }
      const deleted = await db.deleteFrom('webhook_endpoints').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
      return deleted.numDeletedRows > 0n
    },

    async redeliver(accountId, eventId, types, now) {
      if (types.length === 0) return undefined
      return db.transaction().execute(async (trx) => {
        const visible = await trx
          .selectFrom('events')
          .select(['id', 'type'])
          .where('id', '=', eventId)
          .where((eb) => eb.or([eb('account_id', '=', accountId), eb('account_id', 'is', null)]))
          .where('type', 'in', types)
          .executeTakeFirst()
        if (!visible) return undefined
        const queued = await sql`
          insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, trigger, created_at)
          select e.id, t.id, 'pending', 0, ${now}, 'manual', ${now}
          from events t join webhook_endpoints e on ${redeliveredTo(dialect)}
          where t.id = ${eventId} and e.account_id = ${accountId}`.execute(trx)
        return { deliveries: Number(queued.numAffectedRows ?? 0n), type: visible.type }
      })
    },

    async insertTestEvent(endpoint, type, data, now) {
      return db.transaction().execute(async (trx) => {
        const row = await trx.insertInto('events').values({ type, account_id: endpoint.accountId, data, created_at: now }).returningAll().executeTakeFirstOrThrow()
        await trx
          .insertInto('webhook_deliveries')
          .values({ endpoint_id: endpoint.id, event_id: row.id, status: 'pending', attempts: 0, next_attempt_at: now, trigger: 'manual', created_at: now })
          .execute()
        return toEvent(row)
      })
    },

    async attempts(endpointId, limit) {
      const rows = await db
        .selectFrom('webhook_attempts as a')
        .leftJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
        .selectAll('a')
        .select(['d.status as delivery_status', 'd.next_attempt_at as delivery_next_attempt_at'])
        .where('a.endpoint_id', '=', endpointId)
        .orderBy('a.id', 'desc')
        .limit(limit)
        .execute()
      return rows.map(toAttempt)
    },
  }
}

function toAttempt(row: Selectable<WebhookAttemptsTable> & { delivery_status: string | null; delivery_next_attempt_at: number | null }): StoredAttempt {
  return {
    id: row.id,
    deliveryId: row.delivery_id,
    eventId: row.event_id,
    trigger: row.trigger as StoredAttempt['trigger'],
    at: row.at,
    durationMs: row.duration_ms,
    responseStatus: row.response_status,
    error: row.error,
    deliveryNextAttemptAt: row.delivery_status === 'pending' ? row.delivery_next_attempt_at : null,
  }
}
