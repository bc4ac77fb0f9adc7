// What the webhook endpoints and the delivery queue both need: the subscription rule
// and the rows as the contracts see them.
import { sql, type RawBuilder, type Selectable } from 'kysely'
import { TEST_EVENT } from '../../vocabulary/event-types.js'
import type { Dialect } from '../dialect.js'
import type { EventsTable, WebhookEndpointsTable } from '../schema.js'
import type { StoredEndpoint, StoredEvent } from '../webhook-endpoints-store.js'

/**
 * Whether endpoint `e` takes event `t`: enabled, of an account not disabled, subscribed
 * to its type (or to `*`), and of the event's account when it has one. The fan-out joins on it, and a redelivery of any but a test event (`redeliveredTo`);
 * the event triggers' mark for fan-out (migration 2026-11-24-007) asks only whether any
 * endpoint might.
 */
export function takes(dialect: Dialect): RawBuilder<unknown> {
  const position = dialect === 'postgres' ? sql.raw('strpos') : sql.raw('instr')
  return sql`${sends()}
        and (e.enabled_events = '*' or ${position}(' ' || e.enabled_events || ' ', ' ' || t.type || ' ') > 0)
        and (t.account_id is null or e.account_id = t.account_id)`
}

/**
 * Whether a redelivery of event `t` goes to endpoint `e`: a test event only to the
 * endpoint it was made for (whatever that one subscribes to) and only while it is sent
 * anything; any other event wherever the fan-out would take it (`takes`).
 */
export function redeliveredTo(dialect: Dialect): RawBuilder<unknown> {
  return sql`((t.type = ${TEST_EVENT} and ${sends()} and exists (select 1 from webhook_deliveries own where own.event_id = t.id and own.endpoint_id = e.id))
        or (t.type <> ${TEST_EVENT} and ${takes(dialect)}))`
}

/** Whether endpoint `e` is sent anything at all: it is enabled, and so is its account. A test event asks only this at its claim. */
export function sends(): RawBuilder<unknown> {
  return sql`e.disabled_at is null and not exists (select 1 from accounts a where a.id = e.account_id and a.disabled_at is not null)`
}

export function toEvent(row: Selectable<EventsTable>): StoredEvent {
  return { id: row.id, type: row.type, accountId: row.account_id, data: row.data, createdAt: row.created_at }
}

/** The endpoint columns the API reads: every one but the secrets. */
export const ENDPOINT_COLUMNS = ['id', 'account_id', 'url', 'description', 'enabled_events', 'previous_secret_until', 'disabled_at', 'failing_since', 'created_at'] as const

export function toEndpoint(row: Omit<Selectable<WebhookEndpointsTable>, 'secret' | 'previous_secret'>): StoredEndpoint {
  return {
    id: row.id,
    accountId: row.account_id,
    url: row.url,
    description: row.description,
    enabledEvents: row.enabled_events,
    previousSecretUntil: row.previous_secret_until,
    disabledAt: row.disabled_at,
    failingSince: row.failing_since,
    createdAt: row.created_at,
  }
}
