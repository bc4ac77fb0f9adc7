// The delivery queue (delivery-queue.ts), written once in Kysely for both databases.
// Only the claims differ: PostgreSQL's dispatchers skip the rows another one has
// locked (FOR UPDATE SKIP LOCKED); SQLite has one writer, so its write is the claim.
import { sql, type Kysely, type Transaction } from 'kysely'
import type { AttemptRecord, DeliveryQueue } from '../delivery-queue.js'
import type { Dialect } from '../dialect.js'
import type { Database } from '../schema.js'
import type { StoredEndpoint, StoredEvent, StoredSecrets } from '../webhook-endpoints-store.js'
import { sends, takes, toEndpoint, toEvent } from './webhook-rows.js'

/** `watch`, for a backend that has a way to be told (postgres/notifications.ts). */
export type Watch = DeliveryQueue['watch']
const pollOnly: Watch = async () => async () => {}

export function createDeliveryQueue(db: Kysely<Database>, dialect: Dialect, watch: Watch = pollOnly): DeliveryQueue {
  /** The endpoints, each with whether its account is disabled. */
  async function endpointsByIds(ids: readonly number[]): Promise<Map<number, { endpoint: StoredEndpoint; secrets: StoredSecrets; accountDisabled: boolean }>> {
    if (ids.length === 0) return new Map()
    const rows = await db
      .selectFrom('webhook_endpoints as e')
      .innerJoin('accounts as a', 'a.id', 'e.account_id')
      .selectAll('e')
      .select('a.disabled_at as account_disabled_at')
      .where('e.id', 'in', [...new Set(ids)])
      .execute()
    return new Map(
      rows.map(({ account_disabled_at, secret, previous_secret, ...row }) => [row.id, { endpoint: toEndpoint(row), secrets: { secret, previousSecret: previous_secret }, accountDisabled: account_disabled_at !== null }]),
    )
  }

  /**
   * Of these deliveries, those the subscription rule still lets go: a scheduled one, if
   * its endpoint takes its event (`takes`, the fan-out's own join); a manual one (a test
   * event, a redelivery: asked for, whatever the types), if the endpoint and its account are enabled.
   */
  async function stillTaken(ids: readonly number[]): Promise<Set<number>> {
    const { rows } = await sql<{ id: number }>`
      select d.id from webhook_deliveries d
      join events t on t.id = d.event_id
      join webhook_endpoints e on e.id = d.endpoint_id
      where d.id in (${sql.join(ids)}) and (case when d.trigger = 'manual' then ${sends()} else ${takes(dialect)} end)`.execute(db)
    return new Set(rows.map((row) => Number(row.id)))
  }

  async function eventsByIds(ids: readonly number[]): Promise<Map<number, StoredEvent>> {
    if (ids.length === 0) return new Map()
    const rows = await db.selectFrom('events').selectAll().where('id', 'in', [...new Set(ids)]).execute()
    return new Map(rows.map((row) => [row.id, toEvent(row)]))
  }

  return {
    async fanOut(now, limit) {
      // One scheduled delivery per endpoint and event (the partial unique index of
      // migration 2026-11-25-012): a second fan-out of an event adds none. (`where true`:
      // SQLite would read the join's ON and the ON CONFLICT as one clause.)
      const deliveries = (taken: ReturnType<typeof sql>) => sql`
        insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at)
        select e.id, t.id, 'pending', 0, ${now}, ${now} from ${taken} t join webhook_endpoints e on ${takes(dialect)}
        where true on conflict do nothing`
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

    async claimDue(now, leaseMs, limit, perEndpoint = limit) {
      const leaseUntil = now + leaseMs
      // Candidates, oldest due first, of endpoints with room (PostgreSQL: skipping the rows
      // another dispatcher is claiming); then at most `room` of each endpoint's. A few
      // times `limit` candidates, so that one endpoint's backlog at the head of the queue
      // does not leave the claim short: the next claim finds that endpoint full, and skips it.
      const { rows: claimed } = await sql<{ id: number; attempts: number; event_id: number; endpoint_id: number; trigger: 'scheduled' | 'manual'; created_at: number }>`
        with busy as (
          select endpoint_id, count(*) as n from webhook_deliveries
          where status = 'pending' and lease_until > ${now} group by endpoint_id
        ),
        candidates as (
          select id, endpoint_id, next_attempt_at from webhook_deliveries
          where status = 'pending' and next_attempt_at <= ${now} and (lease_until is null or lease_until <= ${now})
            and endpoint_id not in (select endpoint_id from busy where n >= ${perEndpoint})
          order by next_attempt_at, id limit ${limit * Math.min(perEndpoint, 4)}
          ${dialect === 'postgres' ? sql`for update skip locked` : sql``}
        ),
        chosen as (
          select c.id from (
            select id, endpoint_id, next_attempt_at, row_number() over (partition by endpoint_id order by next_attempt_at, id) as rank from candidates
          ) c left join busy b on b.endpoint_id = c.endpoint_id
          where c.rank <= ${perEndpoint} - coalesce(b.n, 0)
          order by c.next_attempt_at, c.id limit ${limit}
        )
        update webhook_deliveries set lease_until = ${leaseUntil} where id in (select id from chosen)
        returning id, attempts, event_id, endpoint_id, trigger, created_at`.execute(db)
      if (claimed.length === 0) return []
      const [events, endpoints, taken] = await Promise.all([
        eventsByIds(claimed.map((row) => row.event_id)),
        endpointsByIds(claimed.map((row) => row.endpoint_id)),
        stillTaken(claimed.map((row) => row.id)),
      ])
      return claimed.flatMap((row) => {
        const event = events.get(row.event_id)
        const target = endpoints.get(row.endpoint_id)
        if (!event || !target) return []
        const refusal = taken.has(row.id) ? undefined : target.endpoint.disabledAt !== null ? 'the endpoint is disabled' : target.accountDisabled ? 'its account is disabled' : `the endpoint no longer takes ${event.type} events`
        return [{ id: row.id, attempts: row.attempts, trigger: row.trigger, leaseUntil, queuedAt: Number(row.created_at), event, endpoint: target.endpoint, secrets: target.secrets, ...(refusal === undefined ? {} : { refusal }) }]
      })
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

    watch,

    async backlog(now) {
      const [counts, oldest] = await Promise.all([
        sql<{ due: number | string | null; retrying: number | string | null }>`
          select sum(case when next_attempt_at <= ${now} then 1 else 0 end) as due, sum(case when next_attempt_at > ${now} then 1 else 0 end) as retrying
          from webhook_deliveries where status = 'pending'`.execute(db),
        sql<{ since: number | string | null }>`
          select min(since) as since from (
            select min(created_at) as since from events where fan_out_pending = 1
            union all
            select min(case when d.trigger = 'manual' then d.created_at else t.created_at end) from webhook_deliveries d join events t on t.id = d.event_id
            where d.status = 'pending' and d.attempts = 0
          ) oldest`.execute(db),
      ])
      const number = (value: number | string | null | undefined) => (value === null || value === undefined ? null : Number(value))
      return { due: number(counts.rows[0]?.due) ?? 0, retrying: number(counts.rows[0]?.retrying) ?? 0, oldestSince: number(oldest.rows[0]?.since) }
    },

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
