// Webhooks: the account's endpoints (create, edit events, disable, delete, rotate the
// secret, send a test event), each endpoint's deliveries (with the next retry of one that failed) and a redeliver button, and
// the event feed with each event's JSON.
import { useEffect, useState } from 'preact/hooks'
import type { DeliveryAttempt, PetstoreEvent, WebhookEndpoint } from '../api.js'
import { EVENT_TYPES, readScopeOf } from '../../../src/vocabulary/event-types.js'
import { ActionButton, ErrorNote, formatTime, missingScope, NeedsScope, Outcome, useSession } from '../ui.js'

export function Webhooks() {
  return (
    <>
      <NeedsScope operation="listWebhookEndpoints">
        <Endpoints />
      </NeedsScope>
      <NeedsScope operation="listEvents">
        <Events />
      </NeedsScope>
    </>
  )
}

function EventChoice({ chosen, onChange, disabled }: { chosen: string[]; onChange: (events: string[]) => void; disabled?: boolean }) {
  return (
    <fieldset disabled={disabled}>
      <legend>Events</legend>
      {['*', ...EVENT_TYPES].map((type) => (
        <label key={type} class="inline">
          <input type="checkbox" checked={chosen.includes(type)} onChange={(e) => onChange(e.currentTarget.checked ? [...chosen, type] : chosen.filter((t) => t !== type))} />
          {type === '*' ? 'all events' : type}
        </label>
      ))}
    </fieldset>
  )
}

function Endpoints() {
  const session = useSession()
  const { api } = session
  // The API lets a key change, rotate the secret of, or delete only an endpoint whose every type it may read.
  const mayActOn = (types: readonly string[]) => (types.includes('*') ? EVENT_TYPES : types).every((type) => session.scopes.includes(readScopeOf(type)))
  const [endpoints, setEndpoints] = useState<WebhookEndpoint[]>()
  const [error, setError] = useState<unknown>()
  const [done, setDone] = useState<string>()
  const [url, setUrl] = useState('')
  const [events, setEvents] = useState<string[]>(['*'])
  const [shown, setShown] = useState<number>()
  const [editing, setEditing] = useState<{ id: number; events: string[] }>()
  const missing = missingScope(session, 'createWebhookEndpoint')

  const load = async () => {
    try {
      setEndpoints((await api.listWebhookEndpoints()).items)
    } catch (failure) {
      setError(failure)
    }
  }
  useEffect(() => {
    void load()
  }, [])
  const act = async (what: () => Promise<string>) => {
    try {
      const message = await what()
      // The list first, then the message: what it says is on the page when it shows.
      await load()
      setDone(message)
      setError(undefined)
    } catch (failure) {
      setDone(undefined)
      setError(failure)
    }
  }

  return (
    <section aria-labelledby="endpoints">
      <form
        aria-label="Add an endpoint"
        onSubmit={(event) => {
          event.preventDefault()
          void act(async () => {
            const made = await api.createWebhookEndpoint({ url, enabledEvents: events })
            setUrl('')
            return `Endpoint ${made.id} added. Its signing secret, shown this once: ${made.secret ?? ''}`
          })
        }}
      >
        <label>
          URL
          <input type="url" required value={url} disabled={missing !== undefined} onInput={(e) => setUrl(e.currentTarget.value)} />
        </label>
        <EventChoice chosen={events} onChange={setEvents} disabled={missing !== undefined} />
        <button type="submit" disabled={missing !== undefined || events.length === 0} title={missing && `Needs the ${missing} scope`}>
          Add endpoint{missing && <span class="needs"> (needs {missing})</span>}
        </button>
      </form>
      <h2 id="endpoints">Endpoints</h2>
      {done && (
        <p class="ok secret" role="status">
          {done}
        </p>
      )}
      <ErrorNote error={error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Id</th>
            <th scope="col">URL</th>
            <th scope="col">Events</th>
            <th scope="col">Status</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {endpoints?.map((endpoint) => (
            <tr key={endpoint.id} data-endpoint-id={endpoint.id}>
              <td>{endpoint.id}</td>
              <td>{endpoint.url}</td>
              <td>{endpoint.enabledEvents.join(', ')}</td>
              <td>{endpoint.status}</td>
              <td>
                <ActionButton operation="listWebhookDeliveries" label={`Deliveries of endpoint ${endpoint.id}`} onClick={() => setShown(shown === endpoint.id ? undefined : endpoint.id)}>
                  Deliveries
                </ActionButton>{' '}
                <ActionButton operation="testWebhookEndpoint" label={`Send test to endpoint ${endpoint.id}`} onClick={() => act(async () => `Test event ${(await api.testWebhookEndpoint(endpoint.id)).id} sent to endpoint ${endpoint.id}.`)}>
                  Send test
                </ActionButton>{' '}
                {mayActOn(endpoint.enabledEvents) && (
                  <>
                    <ActionButton operation="updateWebhookEndpoint" label={`Edit events of endpoint ${endpoint.id}`} onClick={() => setEditing({ id: endpoint.id, events: endpoint.enabledEvents })}>
                      Edit events
                    </ActionButton>{' '}
                    <ActionButton
                      operation="updateWebhookEndpoint"
                      label={`${endpoint.status === 'enabled' ? 'Disable' : 'Enable'} endpoint ${endpoint.id}`}
                      onClick={() => act(async () => `Endpoint ${(await api.updateWebhookEndpoint(endpoint.id, { enabled: endpoint.status !== 'enabled' })).id} is ${endpoint.status === 'enabled' ? 'disabled' : 'enabled'}.`)}
                    >
                      {endpoint.status === 'enabled' ? 'Disable' : 'Enable'}
                    </ActionButton>{' '}
                    <ActionButton operation="rotateWebhookSecret" label={`Rotate secret of endpoint ${endpoint.id}`} onClick={() => act(async () => `New signing secret of endpoint ${endpoint.id}, shown this once (the old one signs beside it for 24 hours): ${(await api.rotateWebhookSecret(endpoint.id)).secret ?? ''}`)}>
                      Rotate secret
                    </ActionButton>{' '}
                    <ActionButton operation="deleteWebhookEndpoint" label={`Delete endpoint ${endpoint.id}`} onClick={() => act(async () => (await api.deleteWebhookEndpoint(endpoint.id), `Endpoint ${endpoint.id} deleted.`))}>
                      Delete
                    </ActionButton>
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {editing && (
        <form
          aria-label={`Events of endpoint ${editing.id}`}
          onSubmit={(event) => {
            event.preventDefault()
            void act(async () => {
              await api.updateWebhookEndpoint(editing.id, { enabledEvents: editing.events })
              setEditing(undefined)
              return `Endpoint ${editing.id} now gets ${editing.events.join(', ')}.`
            })
          }}
        >
          <EventChoice chosen={editing.events} onChange={(chosen) => setEditing({ ...editing, events: chosen })} />
          <button type="submit" disabled={editing.events.length === 0}>
            Save events
          </button>
          <button type="button" onClick={() => setEditing(undefined)}>
            Cancel
          </button>
        </form>
      )}
      {shown !== undefined && <Deliveries endpointId={shown} />}
    </section>
  )
}

function Deliveries({ endpointId }: { endpointId: number }) {
  const { api } = useSession()
  const [attempts, setAttempts] = useState<DeliveryAttempt[]>()
  const [error, setError] = useState<unknown>()
  const [done, setDone] = useState<string>()
  const load = async () => {
    try {
      setAttempts((await api.listWebhookDeliveries(endpointId)).items)
    } catch (failure) {
      setError(failure)
    }
  }
  useEffect(() => {
    void load()
  }, [endpointId])
  return (
    <section aria-labelledby="deliveries">
      <h3 id="deliveries">Deliveries to endpoint {endpointId}</h3>
      <button type="button" onClick={() => void load()}>
        Refresh deliveries
      </button>
      <Outcome done={done} error={error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">Trigger</th>
            <th scope="col">Status code</th>
            <th scope="col">Duration</th>
            <th scope="col">When</th>
            <th scope="col">Error</th>
            <th scope="col">Next retry</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {attempts?.map((attempt, index) => (
            <tr key={`${attempt.eventId}-${index}`} class="delivery">
              <td>{attempt.eventId}</td>
              <td>{attempt.trigger}</td>
              <td>{attempt.responseStatus ?? 'no answer'}</td>
              <td>{attempt.durationMs} ms</td>
              <td>{formatTime(attempt.at)}</td>
              <td>{attempt.error ?? ''}</td>
              {/* On a delivery's latest attempt when it will be tried again: when. */}
              <td class="next-retry">{attempt.nextAttemptAt === null ? '' : formatTime(attempt.nextAttemptAt)}</td>
              <td>
                <ActionButton
                  operation="redeliverEvent"
                  label={`Redeliver event ${attempt.eventId}`}
                  onClick={async () => {
                    try {
                      const { deliveries } = await api.redeliverEvent(attempt.eventId)
                      setDone(`Event ${attempt.eventId} queued again for ${deliveries} endpoint(s).`)
                      setError(undefined)
                    } catch (failure) {
                      setError(failure)
                    }
                  }}
                >
                  Redeliver
                </ActionButton>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  )
}

function Events() {
  const { api } = useSession()
  const [events, setEvents] = useState<PetstoreEvent[]>()
  const [cursor, setCursor] = useState<string>()
  const [next, setNext] = useState<string>()
  const [error, setError] = useState<unknown>()
  useEffect(() => {
    api.listEvents(cursor).then((page) => {
      setEvents(page.items)
      setNext(page.nextCursor)
    }, setError)
  }, [cursor])
  return (
    <section aria-labelledby="events">
      <h2 id="events">Events</h2>
      <ErrorNote error={error} />
      {events?.length === 0 && <p class="note">No events yet.</p>}
      {events?.map((event) => (
        <details key={event.id} class="event">
          <summary>
            {event.id} · {event.type} · {formatTime(event.timestamp)}
          </summary>
          <pre tabIndex={0}>{JSON.stringify(event, null, 2)}</pre>
        </details>
      ))}
      <button type="button" disabled={next === undefined} onClick={() => setCursor(next)}>
        Older events
      </button>
    </section>
  )
}
