// The webhooks store (webhooks-store.ts), written once in Kysely for both databases.
// Only the claims differ: PostgreSQL's dispatchers skip the rows another one has
// locked (FOR UPDATE SKIP LOCKED); SQLite has one writer, so its write is the claim.
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely'
import type { Dialect } from '../dialect.js'
import type { Database, EventsTable, WebhookAttemptsTable, WebhookEndpointsTable } from '../schema.js'
import type { AttemptRecord, StoredAttempt, StoredEndpoint, StoredEvent, WebhooksStore } from '../webhooks-store.js'

/** `watch`, for a backend that has a way to be told (postgres/notifications.ts). */
export type Watch = WebhooksStore['watch']
const pollOnly: Watch = async () => async () => {}

export function createWebhooksStore(db: Kysely<Database>, dialect: Dialect, watch: Watch = pollOnly): WebhooksStore {
  async function endpointsByIds(ids: readonly number[]): Promise<Map<number, StoredEndpoint>> {
    if (ids.length === 0) return new Map()
    const rows = await db.selectFrom('webhook_endpoints').selectAll().where('id', 'in', [...new Set(ids)]).execute()
    return new Map(rows.map((row) => [row.id, toEndpoint(row)]))
  }

  async function eventsByIds(ids: readonly number[]): Promise<Map<number, StoredEvent>> {
    if (ids.length === 0) return new Map()
    const rows = await db.selectFrom('events').selectAll().where('id', 'in', [...new Set(ids)]).execute()
    return new Map(rows.map((row) => [row.id, toEvent(row)]))
  }

  return {
    async events({ accountId, type, beforeId, limit }) {
      let query = db
        .selectFrom('events')
        .selectAll()
        .where((eb) => eb.or([eb('account_id', '=', accountId), eb('account_id', 'is', null)]))
      if (type !== undefined) query = query.where('type', '=', type)
      if (beforeId !== undefined) query = query.where('id', '<', beforeId)
      return (await query.orderBy('id', 'desc').limit(limit).execute()).map(toEvent)
    },

    async event(id) {
      const row = await db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirst()
      return row && toEvent(row)
    },

    async insertEndpoint(endpoint, now) {
      const row = await db
        .insertInto('webhook_endpoints')
        .values({
          account_id: endpoint.accountId,
          url: endpoint.url,
          description: endpoint.description,
          enabled_events: endpoint.enabledEvents,
          secret: endpoint.secret,
          created_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow()
      return toEndpoint(row)
    },

    async endpoints(accountId) {
      return (await db.selectFrom('webhook_endpoints').selectAll().where('account_id', '=', accountId).orderBy('id').execute()).map(toEndpoint)
    },

    async endpoint(accountId, id) {
      const row = await db.selectFrom('webhook_endpoints').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
      return row && toEndpoint(row)
    },

    async updateEndpoint(accountId, id, changes) {
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
        .returningAll()
        .executeTakeFirst()
      return row && toEndpoint(row)
    },

    async rotateSecret(accountId, id, secret, previousUntil) {
      const row = await db
        .updateTable('webhook_endpoints')
        .set((eb) => ({ previous_secret: eb.ref('secret'), previous_secret_until: previousUntil, secret }))
        .where('account_id', '=', accountId)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst()
      return row && toEndpoint(row)
    },

    async deleteEndpoint(accountId, id) {
      return db.transaction().execute(async (trx) => {
        const deleted = await trx.deleteFrom('webhook_endpoints').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst()
        if (deleted.numDeletedRows === 0n) return false
        await trx.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).where('status', '=', 'pending').execute()
        return true
      })
    },

    async fanOut(now, limit) {
      // The endpoints that take event `t` now: enabled, subscribed to its type, and its account's when it has an owner.
      const position = dialect === 'postgres' ? sql.raw('strpos') : sql.raw('instr')
      const takes = sql`e.disabled_at is null
        and (e.enabled_events = '*' or ${position}(' ' || e.enabled_events || ' ', ' ' || t.type || ' ') > 0)
        and (t.account_id is null or e.account_id = t.account_id)`
      const deliveries = (taken: ReturnType<typeof sql>) => sql`
        insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at)
        select e.id, t.id, 'pending', 0, ${now}, ${now} from ${taken} t join webhook_endpoints e on ${takes}`
      if (dialect === 'postgres') {
        const result = await sql`
          with taken as (select id, type, account_id from events where fan_out_pending = 1 order by id limit ${limit} for update skip locked),
          made as (${deliveries(sql`taken`)})
          update events set fan_out_pending = 0 where id in (select id from taken)`.execute(db)
        return Number(result.numAffectedRows ?? 0n)
      }
      // SQLite: the transaction holds the only write lock from its first statement, so both see the same events.
      const taken = sql`(select id, type, account_id from events where fan_out_pending = 1 order by id limit ${limit})`
      return db.transaction().execute(async (trx) => {
        await deliveries(taken).execute(trx)
        const result = await sql`update events set fan_out_pending = 0 where id in (select id from ${taken})`.execute(trx)
        return Number(result.numAffectedRows ?? 0n)
      })
    },

    async claimDue(now, leaseMs, limit) {
      const leaseUntil = now + leaseMs
      const claimed = await db
        .updateTable('webhook_deliveries')
        .set({ lease_until: leaseUntil })
        .where('id', 'in', (eb) => {
          const due = eb
            .selectFrom('webhook_deliveries')
            .select('id')
            .where('status', '=', 'pending')
            .where('next_attempt_at', '<=', now)
            .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<=', now)]))
            .orderBy('next_attempt_at')
            .limit(limit)
          return dialect === 'postgres' ? due.forUpdate().skipLocked() : due
        })
        .returning(['id', 'attempts', 'event_id', 'endpoint_id', 'trigger'])
        .execute()
      const [events, endpoints] = await Promise.all([eventsByIds(claimed.map((row) => row.event_id)), endpointsByIds(claimed.map((row) => row.endpoint_id))])
      return claimed.flatMap((row) => {
        const event = events.get(row.event_id)
        const endpoint = endpoints.get(row.endpoint_id)
        return event && endpoint ? [{ id: row.id, attempts: row.attempts, trigger: row.trigger as 'scheduled' | 'manual', leaseUntil, event, endpoint }] : []
      })
    },

    async enqueue(endpointId, eventId, now) {
      const row = await db
        .insertInto('webhook_deliveries')
        .values({ endpoint_id: endpointId, event_id: eventId, status: 'pending', attempts: 0, next_attempt_at: now, trigger: 'manual', created_at: now })
        .returning('id')
        .executeTakeFirstOrThrow()
      return row.id
    },

    async recordAttempts(attempts) {
      if (attempts.length === 0) return []
      return db.transaction().execute(async (trx) => {
        const recorded: boolean[] = []
        for (const attempt of attempts) recorded.push(await recordIn(trx, attempt))
        return recorded
      })
    },

    async release(deliveryId, leaseUntil) {
      await db.updateTable('webhook_deliveries').set({ lease_until: null }).where('id', '=', deliveryId).where('lease_until', '=', leaseUntil).execute()
    },

    async attempts(endpointId, limit) {
      const rows = await db.selectFrom('webhook_attempts').selectAll().where('endpoint_id', '=', endpointId).orderBy('id', 'desc').limit(limit).execute()
      return rows.map(toAttempt)
    },

    async insertEvent(event, endpointIds, now) {
      return db.transaction().execute(async (trx) => {
        const row = await trx
          .insertInto('events')
          .values({ type: event.type, account_id: event.accountId, data: event.data, created_at: now })
          .returningAll()
          .executeTakeFirstOrThrow()
        if (endpointIds.length > 0) {
          await trx
            .insertInto('webhook_deliveries')
            .values(endpointIds.map((endpointId) => ({ endpoint_id: endpointId, event_id: row.id, status: 'pending', attempts: 0, next_attempt_at: now, trigger: 'manual', created_at: now })))
            .execute()
        }
        return toEvent(row)
      })
    },

    watch,

    async purge(before) {
      await db.transaction().execute(async (trx) => {
        await trx.deleteFrom('webhook_attempts').where('event_id', 'in', (eb) => eb.selectFrom('events').select('id').where('created_at', '<', before)).execute()
        await trx
          .deleteFrom('webhook_deliveries')
          .where('status', '!=', 'pending')
          .where('event_id', 'in', (eb) => eb.selectFrom('events').select('id').where('created_at', '<', before))
          .execute()
        await trx
          .deleteFrom('events')
          .where('created_at', '<', before)
          .where((eb) => eb.not(eb.exists(eb.selectFrom('webhook_deliveries').select('id').whereRef('webhook_deliveries.event_id', '=', 'events.id'))))
          .execute()
      })
    },
  }
}

function toEvent(row: Selectable<EventsTable>): StoredEvent {
  return { id: row.id, type: row.type, accountId: row.account_id, data: row.data, createdAt: row.created_at }
}

/** Records one attempt inside the caller's transaction; false when its lease was lost. */
async function recordIn(trx: Transaction<Database>, attempt: AttemptRecord): Promise<boolean> {
  const delivery = await trx
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      status: attempt.outcome.status,
      attempts: eb('attempts', '+', 1),
      lease_until: null,
      ...(attempt.outcome.status === 'pending' ? { next_attempt_at: attempt.outcome.nextAttemptAt } : {}),
    }))
    .where('id', '=', attempt.deliveryId)
    .where('lease_until', '=', attempt.leaseUntil)
    .returning(['endpoint_id', 'event_id'])
    .executeTakeFirst()
  if (!delivery) return false
  await trx
    .insertInto('webhook_attempts')
    .values({
      delivery_id: attempt.deliveryId,
      endpoint_id: delivery.endpoint_id,
      event_id: delivery.event_id,
      trigger: attempt.trigger,
      at: attempt.at,
      duration_ms: attempt.durationMs,
      response_status: attempt.responseStatus,
      error: attempt.error,
    })
    .execute()
  const delivered = attempt.outcome.status === 'delivered'
  // Written only when it changes (the first failure after a success, the first success
  // after failures): a batch of successes to one endpoint leaves its row alone.
  await trx
    .updateTable('webhook_endpoints')
    .set({ failing_since: delivered ? null : attempt.at })
    .where('id', '=', delivery.endpoint_id)
    .where('failing_since', delivered ? 'is not' : 'is', null)
    .execute()
  if (attempt.disableBecause !== undefined) {
    const disabled = await trx
      .updateTable('webhook_endpoints')
      .set({ disabled_at: attempt.at })
      .where('id', '=', delivery.endpoint_id)
      .where('disabled_at', 'is', null)
      .returning(['id', 'url', 'account_id'])
      .executeTakeFirst()
    if (disabled) {
      // An outbox event like the triggers' own: fanned out by the dispatchers to whatever endpoints take it.
      const data = JSON.stringify({ id: disabled.id, url: disabled.url, reason: attempt.disableBecause })
      await trx.insertInto('events').values({ type: 'webhook_endpoint.disabled', account_id: disabled.account_id, data, created_at: attempt.at, fan_out_pending: 1 }).execute()
    }
  }
  return true
}

function toEndpoint(row: Selectable<WebhookEndpointsTable>): StoredEndpoint {
  return {
    id: row.id,
    accountId: row.account_id,
    url: row.url,
    description: row.description,
    enabledEvents: row.enabled_events,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretUntil: row.previous_secret_until,
    disabledAt: row.disabled_at,
    failingSince: row.failing_since,
    createdAt: row.created_at,
  }
}

function toAttempt(row: Selectable<WebhookAttemptsTable>): StoredAttempt {
  return {
    id: row.id,
    deliveryId: row.delivery_id,
    eventId: row.event_id,
    trigger: row.trigger as StoredAttempt['trigger'],
    at: row.at,
    durationMs: row.duration_ms,
    responseStatus: row.response_status,
    error: row.error,
  }
}
