// The delivery queue (delivery-queue.ts), written once in Kysely for both databases.
// The claims and the records of attempts are set-based on both; they differ in how
// many statements they take: on PostgreSQL one each, and one for a record that claims
// too (data-modifying CTEs), named statements on the pool, its dispatchers skipping the
// rows another one has locked (FOR UPDATE SKIP LOCKED); on SQLite, which has one writer
// (so its write is the claim) and cannot return a join from an UPDATE, a claim and a
// read, and a record's three statements, in one transaction.
import { sql, type CompiledQuery, type Kysely, type RawBuilder, type Transaction } from 'kysely'
import type { AttemptRecord, ClaimAhead, ClaimedDelivery, DeliveryQueue } from '../delivery-queue.js'
import type { Dialect } from '../dialect.js'
import type { Database } from '../schema.js'
import type { StoredSecrets } from '../webhook-endpoints-store.js'
import { deleteInBatches } from './in-batches.js'
import { TEST_EVENT } from '../../vocabulary/event-types.js'
import { sends, takes, toEndpoint, toEvent } from './webhook-rows.js'

/**
 * How many of the oldest due deliveries a claim looks at, leased or held by their
 * endpoint's limit included: bounded, so that with a backlog of millions behind one full
 * endpoint a claim still costs a few milliseconds. When full endpoints own all of them,
 * the claim finds the others' by HOPS.
 */
const CLAIM_LOOKS_AT = 1024
/**
 * Endpoints with pending deliveries a claim also visits, one index seek each, in two runs
 * of this many: from the lowest id, and from a random one. From each with room it takes
 * its oldest due (HOP_TAKES at most). Without them, an endpoint that never answers, whose
 * due deliveries filled the window above, held back every other endpoint's: a tenant's
 * receiver down for an hour stopped every tenant's webhooks.
 */
const HOPS = 64
const HOP_TAKES = 4

/** Events one transaction of the purge deletes, with their deliveries and attempts. */
const PURGE_BATCH = 500

/** What a claim asks for (DeliveryQueue's `claimDue`). */
interface ClaimArgs {
  now: number
  leaseMs: number
  limit: number
  perEndpoint: number
  ahead?: ClaimAhead | undefined
}

/** `watch`, for a backend that has a way to be told (postgres/notifications.ts). */
export type Watch = DeliveryQueue['watch']
const pollOnly: Watch = async () => async () => {}

/**
 * Runs a compiled statement as the named (prepared) statement `name` (PostgreSQL's pool:
 * parsed and planned once per connection rather than at every call). Every statement
 * given one name has one text.
 */
export type RunNamed = <R>(name: string, query: CompiledQuery<R>) => Promise<R[]>

export function createDeliveryQueue(db: Kysely<Database>, dialect: Dialect, watch: Watch = pollOnly, named?: RunNamed): DeliveryQueue {
  /** The hot statements (claims, records): named when the backend has them and no transaction holds a connection. */
  const run = async <R>(executor: Kysely<Database>, name: string, query: RawBuilder<R>): Promise<R[]> =>
    named !== undefined && executor === db ? named(name, query.compile(db)) : (await query.execute(executor)).rows

  /**
   * The deliveries under a live lease, by their partial index: SQLite's planner, without
   * statistics, would rather scan every delivery by endpoint for the GROUP BY's order
   * (35 ms a claim at 200,000 deliveries, against 1.5 ms). On PostgreSQL the count of
   * leases (`busy`) does not say `status = 'pending'` (a live lease is only ever on a
   * pending delivery: a claim sets it, a record or a give-back clears it): said, it let
   * the planner, without statistics, count them along the pending deliveries' index,
   * reading every pending one and its row (20,000 rows a claim at 20,000 pending; a
   * claim took 100-400 ms under load).
   */
  const leasedIndex = dialect === 'sqlite' ? sql`indexed by webhook_deliveries_leased` : sql``
  /** SQL's "differs, nulls included". */
  const distinctFrom = dialect === 'postgres' ? sql`is distinct from` : sql`is not`

  /**
   * The claimed deliveries `c` (a CTE, or the table narrowed to them) with their event, their
   * endpoint and its sealed secrets, whether its account is disabled, and whether the
   * subscription rule still lets them go: if its endpoint takes its event (`takes`, the
   * fan-out's own join), a redelivery too (its endpoint may have been pointed elsewhere
   * since, by a key that may not read what it no longer subscribes to); a test event
   * (asked for, whatever the types), if the endpoint and its account are enabled.
   */
  const withTargets = (claimed: ReturnType<typeof sql>) => sql<ClaimRow>`
    select c.id, c.attempts, c.trigger, c.created_at,
      t.id as event_id, t.type as event_type, t.account_id as event_account_id, t.data as event_data, t.created_at as event_created_at,
      e.id as endpoint_id, e.account_id, e.url, e.description, e.enabled_events, e.previous_secret_until, e.disabled_at, e.failing_since,
      e.created_at as endpoint_created_at, e.secret, e.previous_secret,
      case when exists (select 1 from accounts a where a.id = e.account_id and a.disabled_at is not null) then 1 else 0 end as account_disabled,
      case when (case when c.trigger = 'manual' and t.type = ${TEST_EVENT} then ${sends()} else ${takes(dialect)} end) then 1 else 0 end as taken
    from ${claimed} join events t on t.id = c.event_id join webhook_endpoints e on e.id = c.endpoint_id`

  /**
   * The claim's CTEs, `held` to `chosen` (after a WITH, or after the CTEs of a record in
   * the same statement). Candidates, oldest due first, of endpoints with room, among the
   * CLAIM_LOOKS_AT oldest due (a claim's cost does not grow with the backlog); then at
   * most each endpoint's room of them (PostgreSQL: skipping the rows another dispatcher is
   * claiming). A few times `limit` candidates, so that one endpoint's backlog at the head
   * of the queue does not leave the claim short: the next claim finds that endpoint full,
   * and skips it.
   *
   * An endpoint's room is `perEndpoint` less its deliveries under a live lease, whichever
   * dispatcher holds them; and `ahead.extra` more for an endpoint in `ahead.endpoints`
   * whose every live lease is in `ahead.held` (this dispatcher's): deliveries claimed
   * ahead, which the dispatcher sends as its requests to the endpoint end, never more
   * than `perEndpoint` at once. No other dispatcher's claim finds room on an endpoint
   * while one holds `perEndpoint` or more of its deliveries, so the requests under way
   * to one endpoint stay within `perEndpoint` in every claim's view, as without.
   *
   * `released`: a CTE of the deliveries a record in the same statement takes out of
   * their lease (PostgreSQL's statement reads the rows as they were before it, still
   * under lease; they are not counted).
   */
  /**
   * A CTE `name (endpoint_id, n)`: up to HOPS endpoints with pending deliveries, in id
   * order after `after`, each found by one seek of webhook_deliveries_endpoint_due; none
   * when the oldest due (`head`) hold `limit` a claim may take: the claim is full
   * without them (a backlog of one endpoint with room is no one's stall).
   */
  const hops = (name: string, after: RawBuilder<unknown>, limit: number) => sql`${sql.raw(name)} (endpoint_id, n) as (
      select (select min(endpoint_id) from webhook_deliveries where status = 'pending' and endpoint_id > ${after}), 1
      where (select count(*) from head) < ${limit}
      union all
      select (select min(w.endpoint_id) from webhook_deliveries w where w.status = 'pending' and w.endpoint_id > h.endpoint_id), h.n + 1
      from ${sql.raw(name)} h where h.endpoint_id is not null and h.n < ${HOPS}
    )`
  /**
   * The oldest due deliveries (HOP_TAKES at most) of each endpoint in `hopped` that has
   * room, by webhook_deliveries_endpoint_due: PostgreSQL by a LATERAL subquery (as an IN
   * it joined every delivery to every endpoint); SQLite, which has no LATERAL, by rowid
   * from a correlated IN, which it runs once an endpoint.
   */
  const oldestDueOfEach = (now: number) => {
    const due = (endpoint: RawBuilder<unknown>) => sql`select x.id, x.endpoint_id, x.next_attempt_at from webhook_deliveries x
      where x.endpoint_id = ${endpoint} and x.status = 'pending' and x.next_attempt_at <= ${now} and (x.lease_until is null or x.lease_until <= ${now})
      order by x.next_attempt_at, x.id limit ${HOP_TAKES}`
    return dialect === 'postgres'
      ? sql`select d.id, d.endpoint_id, d.next_attempt_at from hopped h cross join lateral (${due(sql`h.endpoint_id`)}) d
          where h.endpoint_id not in (select endpoint_id from full_endpoints)`
      : sql`select d.id, d.endpoint_id, d.next_attempt_at from hopped h join webhook_deliveries d on d.id in (select id from (${due(sql`h.endpoint_id`)}))
          where h.endpoint_id not in (select endpoint_id from full_endpoints)`
  }
  /** An id from 0 to the highest endpoint's, at random: where the second run of hops starts. */
  const randomEndpointId =
    dialect === 'postgres'
      ? sql`(select cast(floor(random() * (coalesce(max(id), 0) + 1)) as bigint) from webhook_endpoints)`
      : sql`(select abs(random()) % (coalesce(max(id), 0) + 1) from webhook_endpoints)`

  const choose = ({ now, limit, perEndpoint, ahead }: ClaimArgs, released?: RawBuilder<unknown>) => {
    const extra = ahead?.extra ?? 0
    const ids = (list: readonly number[]) =>
      dialect === 'postgres'
        ? sql`select cast(value as bigint) as id from json_array_elements_text(cast(${JSON.stringify(list)} as json))`
        : sql`select value as id from json_each(${JSON.stringify(list)})`
    const allowance = (endpoint: RawBuilder<unknown>) => sql`cast(${perEndpoint} as integer) + case when ${endpoint} in (select id from flowing) then cast(${extra} as integer) else 0 end`
    return sql`held as (${ids(ahead?.held ?? [])}),
      flowing as (${ids(ahead?.endpoints ?? [])}),
      busy as (
        select endpoint_id, count(*) as n, sum(case when id in (select id from held) then 1 else 0 end) as held_n
        from webhook_deliveries ${leasedIndex}
        where lease_until > ${now} ${released === undefined ? sql`` : sql`and id not in (select id from ${released})`}
        group by endpoint_id
      ),
      room as (
        select endpoint_id, case when n = held_n then ${allowance(sql`endpoint_id`)} else cast(${perEndpoint} as integer) end - n as n from busy
      ),
      full_endpoints as (select endpoint_id from room where n <= 0),
      head as (
        select id, endpoint_id, next_attempt_at from (
          select id, endpoint_id, next_attempt_at, lease_until from webhook_deliveries
          where status = 'pending' and next_attempt_at <= ${now}
          order by next_attempt_at, id limit ${CLAIM_LOOKS_AT}
        ) oldest
        where (lease_until is null or lease_until <= ${now}) and endpoint_id not in (select endpoint_id from full_endpoints)
        order by next_attempt_at, id limit ${limit * Math.min(perEndpoint + extra, 4)}
      ),
      ${hops('low', sql`-1`, limit)},
      ${hops('spot', randomEndpointId, limit)},
      hopped as (select endpoint_id from low where endpoint_id is not null union select endpoint_id from spot where endpoint_id is not null),
      spread as (${oldestDueOfEach(now)}),
      candidates as (select id, endpoint_id, next_attempt_at from head union select id, endpoint_id, next_attempt_at from spread),
      picked as (
        select c.id from (
          select id, endpoint_id, next_attempt_at, row_number() over (partition by endpoint_id order by next_attempt_at, id) as rank from candidates
        ) c left join room r on r.endpoint_id = c.endpoint_id
        where c.rank <= coalesce(r.n, ${allowance(sql`c.endpoint_id`)})
        order by c.next_attempt_at, c.id limit ${limit}
      ),
      chosen as (
        -- PostgreSQL: only the picked rows are locked, and those another dispatcher is
        -- claiming skipped (their lease is checked again on the row as it is now).
        select id from webhook_deliveries where id in (select id from picked)
        ${dialect === 'postgres' ? sql`and status = 'pending' and (lease_until is null or lease_until <= ${now}) for update skip locked` : sql``}
      )`
  }
  const lease = ({ now, leaseMs }: ClaimArgs) => sql`update webhook_deliveries set lease_until = ${now + leaseMs} where id in (select id from chosen)`

  /** The claimed rows as the dispatcher takes them, oldest first, with what the rule says of each. */
  const toClaimed = (rows: readonly ClaimRow[], leaseUntil: number): ClaimedDelivery[] =>
    [...rows]
      .sort((a, b) => Number(a.id) - Number(b.id))
      .map((row) => {
        const endpoint = toEndpoint({ ...row, id: row.endpoint_id, created_at: row.endpoint_created_at })
        const event = toEvent({ id: row.event_id, type: row.event_type, account_id: row.event_account_id, data: row.event_data, created_at: row.event_created_at, fan_out_pending: 0 })
        const refusal = Number(row.taken) === 1 ? undefined : endpoint.disabledAt !== null ? 'the endpoint is disabled' : Number(row.account_disabled) === 1 ? 'its account is disabled' : `the endpoint no longer takes ${event.type} events`
        const secrets: StoredSecrets = { secret: row.secret, previousSecret: row.previous_secret }
        return { id: row.id, attempts: row.attempts, trigger: row.trigger, leaseUntil, queuedAt: Number(row.created_at), event, endpoint, secrets, ...(refusal === undefined ? {} : { refusal }) }
      })

  /**
   * Leases due deliveries and reads what the dispatcher needs of them. PostgreSQL: one
   * statement (a data-modifying CTE). SQLite cannot return a join from an UPDATE: the
   * claim, then a read of the rows it leased (in-process, no round trip).
   */
  async function claim(executor: Kysely<Database>, args: ClaimArgs): Promise<ClaimedDelivery[]> {
    let rows: ClaimRow[]
    if (dialect === 'postgres') {
      rows = await run(executor, 'petstore_deliveries_claim', sql<ClaimRow>`with recursive ${choose(args)}, claimed as (${lease(args)} returning id, attempts, event_id, endpoint_id, trigger, created_at) ${withTargets(sql`claimed c`)}`)
    } else {
      const { rows: ids } = await sql<{ id: number }>`with recursive ${choose(args)} ${lease(args)} returning id`.execute(executor)
      if (ids.length === 0) return []
      rows = (await sql<ClaimRow>`${withTargets(sql`webhook_deliveries c`)} where c.id in (${sql.join(ids.map((row) => row.id))})`.execute(executor)).rows
    }
    return toClaimed(rows, args.now + args.leaseMs)
  }

  /**
   * Records attempts, and with `then`, claims after them. The attempts as rows (`input`);
   * each delivery updated under its lease, its attempt written, and the endpoints'
   * failing_since moved, for all of them at once: on PostgreSQL one statement
   * (data-modifying CTEs), the claim in it too; on SQLite three in one transaction, and
   * the claim's two in the same. Disabling an endpoint takes a transaction on both.
   */
  async function record(attempts: readonly AttemptRecord[], then?: ClaimArgs): Promise<{ recorded: boolean[]; claimed: ClaimedDelivery[] }> {
    const columns = sql`input (delivery_id, lease, outcome, next_at, trigger, at, duration_ms, response_status, error)`
    // PostgreSQL: a column of each as an array, so that the statement's text is the same
    // for any number of attempts (a named statement, planned once per connection).
    const input =
      dialect === 'postgres'
        ? sql`${columns} as (select * from unnest(cast(${attempts.map((a) => a.deliveryId)} as bigint[]), cast(${attempts.map((a) => a.leaseUntil)} as bigint[]),
            cast(${attempts.map((a) => a.outcome.status)} as text[]), cast(${attempts.map((a) => (a.outcome.status === 'pending' ? a.outcome.nextAttemptAt : null))} as bigint[]),
            cast(${attempts.map((a) => a.trigger)} as text[]), cast(${attempts.map((a) => a.at)} as bigint[]), cast(${attempts.map((a) => a.durationMs)} as integer[]),
            cast(${attempts.map((a) => a.responseStatus)} as integer[]), cast(${attempts.map((a) => a.error)} as text[])))`
        : sql`${columns} as (values ${sql.join(
            attempts.map(
              (a) =>
                sql`(cast(${a.deliveryId} as bigint), cast(${a.leaseUntil} as bigint), cast(${a.outcome.status} as text), cast(${a.outcome.status === 'pending' ? a.outcome.nextAttemptAt : null} as bigint),
                  cast(${a.trigger} as text), cast(${a.at} as bigint), cast(${a.durationMs} as integer), cast(${a.responseStatus} as integer), cast(${a.error} as text))`,
            ),
          )})`
    const update = sql`update webhook_deliveries as d
      set status = i.outcome, attempts = d.attempts + 1, lease_until = null, next_attempt_at = coalesce(i.next_at, d.next_attempt_at)
      from input i where d.id = i.delivery_id and d.lease_until = i.lease
      returning id`
    const insertAttempts = sql`insert into webhook_attempts (delivery_id, endpoint_id, event_id, trigger, at, duration_ms, response_status, error)
      select i.delivery_id, r.endpoint_id, r.event_id, i.trigger, i.at, i.duration_ms, i.response_status, i.error from recorded r join input i on i.delivery_id = r.id`
    // Written only when it changes: cleared by a success, set by the first failure after
    // the last success (or, with none in these, by the first failure, unless it was set).
    const failingSince = sql`update webhook_endpoints set failing_since = f.since from (
        select g.endpoint_id, case when g.last_ok is null then coalesce(w.failing_since, g.fail_from) else g.fail_from end as since
        from (
          select o.endpoint_id, o.last_ok,
            (select min(x.at) from outcomes x where x.endpoint_id = o.endpoint_id and x.outcome <> 'delivered' and (o.last_ok is null or x.at > o.last_ok)) as fail_from
          from (select endpoint_id, max(case when outcome = 'delivered' then at end) as last_ok from outcomes group by endpoint_id) o
        ) g join webhook_endpoints w on w.id = g.endpoint_id
      ) f where webhook_endpoints.id = f.endpoint_id and webhook_endpoints.failing_since ${distinctFrom} f.since`
    const outcomes = sql`outcomes as (select r.endpoint_id, i.outcome, i.at from recorded r join input i on i.delivery_id = r.id)`
    const recordCtes = sql`${input},
      updated as (${update}, endpoint_id, event_id),
      recorded as (select id, endpoint_id, event_id from updated),
      written as (${insertAttempts}),
      ${outcomes},
      failing as (${failingSince})`
    const write = async (executor: Kysely<Database>): Promise<Set<number>> => {
      if (dialect === 'postgres') {
        const rows = await run(executor, 'petstore_deliveries_record', sql<{ id: number }>`with ${recordCtes} select id from updated`)
        return new Set(rows.map((row) => Number(row.id)))
      }
      const { rows } = await sql<{ id: number }>`with ${input} ${update}`.execute(executor)
      if (rows.length === 0) return new Set()
      const recorded = sql`recorded as (select id, endpoint_id, event_id from webhook_deliveries where id in (${sql.join(rows.map((row) => row.id))}))`
      await sql`with ${input}, ${recorded} ${insertAttempts}`.execute(executor)
      await sql`with ${input}, ${recorded}, ${outcomes} ${failingSince}`.execute(executor)
      return new Set(rows.map((row) => Number(row.id)))
    }
    const disabling = attempts.filter((a) => a.disableBecause !== undefined)
    const answer = (recorded: Set<number>, claimed: ClaimedDelivery[]) => ({ recorded: attempts.map((a) => recorded.has(a.deliveryId)), claimed })
    if (dialect === 'postgres' && disabling.length === 0) {
      if (then === undefined) return answer(await write(db), [])
      // One round trip: the record, then the claim, whose count of leases leaves out the
      // ones this record gives back (`updated`), so that their room is taken at once.
      const rows = await run(
        db,
        'petstore_deliveries_record_claim',
        sql<ClaimRow & { recorded: unknown }>`with recursive ${recordCtes},
          ${choose(then, sql`updated`)},
          claimed as (${lease(then)} returning id, attempts, event_id, endpoint_id, trigger, created_at)
          select r.recorded, x.* from (select coalesce(json_agg(id), cast('[]' as json)) as recorded from updated) r
          left join (${withTargets(sql`claimed c`)}) x on true`,
      )
      const recorded = new Set(((rows[0]?.recorded ?? []) as (number | string)[]).map(Number))
      return answer(recorded, toClaimed(rows.filter((row) => row.id !== null), then.now + then.leaseMs))
    }
    return db.transaction().execute(async (trx) => {
      const ids = await write(trx)
      for (const attempt of disabling) if (ids.has(attempt.deliveryId)) await disable(trx, attempt)
      return answer(ids, then === undefined ? [] : await claim(trx, then))
    })
  }

  return {
    claimAhead: dialect === 'postgres' ? 256 : 64,
    async fanOut(now, limit) {
      // One scheduled delivery per endpoint and event (the partial unique index of
      // migration 2026-11-25-012): a second fan-out of an event adds none. The rule is
      // `takes`; the joins only say where to look for the endpoints it may hold for:
      // an account's event among that account's endpoints, a public one among those
      // subscribed to its type (migration 2026-11-28-019). Joined on `takes` alone, each
      // event read every endpoint: 0.9 s a batch of 500 at 10,000 endpoints, on SQLite in
      // the server's own event loop.
      // (Cast: PostgreSQL types a UNION's bare parameters as text. A type and `*` are
      // looked up apart: PostgreSQL read every subscription for each event of
      // `s.type in (t.type, '*')`. The fence, OFFSET 0, keeps it from joining the events
      // to every endpoint on `takes` first, which it planned, misled by an estimate of 10
      // events for 500.)
      const at = sql`cast(${now} as bigint)`
      const fence = dialect === 'postgres' ? sql`offset 0` : sql``
      const deliveries = (taken: ReturnType<typeof sql>) => sql`
        insert into webhook_deliveries (endpoint_id, event_id, status, attempts, next_attempt_at, created_at)
        select e.id, t.id, 'pending', 0, ${at}, ${at} from ${taken} t
          join webhook_endpoints e on e.account_id = t.account_id and ${takes(dialect)}
        union all
        select e.id, t.id, 'pending', 0, ${at}, ${at} from (
            select t.id, t.type, t.account_id, s.endpoint_id from ${taken} t join webhook_subscriptions s on s.type = t.type where t.account_id is null
            union all
            select t.id, t.type, t.account_id, s.endpoint_id from ${taken} t join webhook_subscriptions s on s.type = '*' where t.account_id is null
            ${fence}
          ) t
          join webhook_endpoints e on e.id = t.endpoint_id and ${takes(dialect)}
        on conflict do nothing`
      if (dialect === 'postgres') {
        // The batch read from the pending events' partial index in order, whatever the
        // statistics say (the queue's connections plan so: postgres-store.ts).
        const { rows } = await sql<{ events: string; newest_at: string | null }>`
          with taken as (select id, type, account_id, created_at from events where fan_out_pending = 1 order by id limit ${limit} for update skip locked),
          made as (${deliveries(sql`taken`)}),
          marked as (update events set fan_out_pending = 0 where id in (select id from taken))
          select count(*) as events, max(created_at) as newest_at from taken`.execute(db)
        return { events: Number(rows[0]!.events), newestAt: rows[0]!.newest_at === null ? undefined : Number(rows[0]!.newest_at) }
      }
      // SQLite: the transaction holds the only write lock from its first statement (a
      // write: a read first would take a snapshot that a commit of the API's could leave
      // stale, SQLITE_BUSY_SNAPSHOT), so all three see the same events.
      const taken = sql`(select id, type, account_id, created_at from events where fan_out_pending = 1 order by id limit ${limit})`
      return db.transaction().execute(async (trx) => {
        await deliveries(taken).execute(trx)
        const { rows } = await sql<{ newest_at: number | null }>`select max(created_at) as newest_at from ${taken}`.execute(trx)
        const result = await sql`update events set fan_out_pending = 0 where id in (select id from ${taken})`.execute(trx)
        return { events: Number(result.numAffectedRows ?? 0n), newestAt: rows[0]?.newest_at ?? undefined }
      })
    },

    claimDue(now, leaseMs, limit, perEndpoint = limit, ahead) {
      return claim(db, { now, leaseMs, limit, perEndpoint, ahead })
    },

    async recordAttempts(attempts) {
      if (attempts.length === 0) return []
      return (await record(attempts)).recorded
    },

    async recordAndClaim(attempts, { now, leaseMs, limit, perEndpoint = limit, ahead }) {
      if (attempts.length === 0) return { recorded: [], claimed: await claim(db, { now, leaseMs, limit, perEndpoint, ahead }) }
      return record(attempts, { now, leaseMs, limit, perEndpoint, ahead })
    },

    async targets(deliveryIds) {
      if (deliveryIds.length === 0) return new Map()
      const { rows } = await sql<ClaimRow>`${withTargets(sql`webhook_deliveries c`)} where c.id in (${sql.join(deliveryIds)}) and c.status = 'pending'`.execute(db)
      return new Map(toClaimed(rows, 0).map(({ id, endpoint, secrets, refusal }) => [id, { endpoint, secrets, ...(refusal === undefined ? {} : { refusal }) }]))
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
      // PURGE_BATCH events a transaction, the oldest first (in-batches.ts): every event
      // older than `before` in one transaction held SQLite's writer (and every request)
      // 120 ms at 60,000 events, ten minutes' worth at 100 writes a second, and more
      // after a stop. An event goes once none of its deliveries is
      // pending, with its deliveries and their attempts. The three statements read the
      // batch alike: the first is a write, so SQLite holds the write lock throughout, and
      // neither deletion changes which events have a pending delivery.
      const batch = sql`(select id from events where created_at < ${before}
        and not exists (select 1 from webhook_deliveries d where d.event_id = events.id and d.status = 'pending')
        order by created_at limit ${PURGE_BATCH})`
      await deleteInBatches(PURGE_BATCH, () =>
        db.transaction().execute(async (trx) => {
          await sql`delete from webhook_attempts where event_id in ${batch}`.execute(trx)
          await sql`delete from webhook_deliveries where event_id in ${batch}`.execute(trx)
          return (await sql`delete from events where id in ${batch}`.execute(trx)).numAffectedRows
        }),
      )
    },
  }
}

/** Disables the attempt's endpoint (it answered 410, or failed for 5 days) and writes the event saying so, inside the caller's transaction; once, whoever finds it so. */
async function disable(trx: Transaction<Database>, attempt: AttemptRecord): Promise<void> {
  const disabled = await trx
    .updateTable('webhook_endpoints')
    .set({ disabled_at: attempt.at })
    .where('id', '=', (eb) => eb.selectFrom('webhook_deliveries').select('endpoint_id').where('id', '=', attempt.deliveryId))
    .where('disabled_at', 'is', null)
    .returning(['id', 'url', 'account_id'])
    .executeTakeFirst()
  if (disabled) {
    // An outbox event like the triggers' own: fanned out by the dispatchers to whatever endpoints take it.
    const data = JSON.stringify({ id: disabled.id, url: disabled.url, reason: attempt.disableBecause })
    await trx.insertInto('events').values({ type: 'webhook_endpoint.disabled', account_id: disabled.account_id, data, created_at: attempt.at, fan_out_pending: 1 }).execute()
  }
}

/** A claimed delivery as the claim reads it: the delivery, its event's and its endpoint's columns, and what the rule says of it. */
interface ClaimRow {
  id: number
  attempts: number
  trigger: 'scheduled' | 'manual'
  created_at: number
  event_id: number
  event_type: string
  event_account_id: number | null
  event_data: string
  event_created_at: number
  endpoint_id: number
  account_id: number
  url: string
  description: string
  enabled_events: string
  previous_secret_until: number | null
  disabled_at: number | null
  failing_since: number | null
  endpoint_created_at: number
  secret: string
  previous_secret: string | null
  account_disabled: number | string
  taken: number | string
}
