// Keys: the account's keys with their status, scopes, expiry, last use and maker;
// create one (the secret shown once), roll with a grace period, disable, revoke; each
// key's requests over the last 7 days.
import { useEffect, useState } from 'preact/hooks'
import type { ApiKey, UsageBucket } from '../api.js'
import { USAGE_OUTCOMES } from '../../../src/vocabulary/usage.js'
import { SCOPES, type Scope } from '../../../src/vocabulary/scopes.js'
import { ActionButton, ErrorNote, formatTime, missingScope, NeedsScope, useSession } from '../ui.js'

const EXPIRIES = [
  { value: '', label: 'as long as this key' },
  { value: '1d', label: '1 day' },
  { value: '7d', label: '7 days' },
  { value: '30d', label: '30 days' },
  { value: '90d', label: '90 days' },
  { value: '366d', label: '1 year' },
]
const GRACES = [
  { value: 0, label: 'none: the old key stops now' },
  { value: 3600, label: '1 hour' },
  { value: 86_400, label: '24 hours' },
  { value: 604_800, label: '7 days' },
]

/**
 * The keys the calling key may roll: itself and the keys it made, however deep, with
 * those its predecessors made (the keys a cascading revoke of it reaches), unless it
 * was replaced by a roll itself. A roll hands the caller the new secret, so the API
 * refuses any other (403).
 */
export function rollableBy(callingKeyId: number, keys: readonly ApiKey[]): Set<number> {
  // A key replaced by a roll rolls nothing: its successor does.
  if (keys.find((key) => key.id === callingKeyId)?.replacedBy != null) return new Set()
  const rollable = new Set([callingKeyId])
  for (let grew = true; grew; ) {
    grew = false
    for (const key of keys) {
      const reached = (key.createdBy !== null && rollable.has(key.createdBy)) || (key.replacedBy !== null && rollable.has(key.replacedBy))
      if (reached && !rollable.has(key.id)) {
        rollable.add(key.id)
        grew = true
      }
    }
  }
  return rollable
}

export function Keys() {
  return (
    <NeedsScope operation="listKeys">
      <KeyList />
    </NeedsScope>
  )
}

/** A secret shown once, with a copy button. */
function Secret({ secret, what }: { secret: string; what: string }) {
  const [copied, setCopied] = useState(false)
  return (
    <div class="ok" role="status">
      <p>
        {what} Copy it now: <strong>it will not be shown again.</strong>
      </p>
      <p class="secret" data-testid="secret">
        {secret}
      </p>
      <button
        type="button"
        onClick={async () => {
          await navigator.clipboard.writeText(secret)
          setCopied(true)
        }}
      >
        {copied ? 'Copied' : 'Copy the secret'}
      </button>
    </div>
  )
}

function KeyList() {
  const session = useSession()
  const { api } = session
  const [keys, setKeys] = useState<ApiKey[]>()
  const [error, setError] = useState<unknown>()
  const [secret, setSecret] = useState<{ secret: string; what: string }>()
  const [grace, setGrace] = useState(86_400)
  const [usageOf, setUsageOf] = useState<ApiKey>()

  const load = async () => {
    try {
      const all: ApiKey[] = []
      let cursor: string | undefined
      do {
        const page = await api.listKeys(cursor)
        all.push(...page.items)
        cursor = page.nextCursor
      } while (cursor !== undefined)
      setKeys(all)
    } catch (failure) {
      setError(failure)
    }
  }
  useEffect(() => {
    void load()
  }, [])

  const act = async (what: () => Promise<unknown>) => {
    try {
      await what()
      setError(undefined)
      await load()
    } catch (failure) {
      setError(failure)
    }
  }

  const rollable = rollableBy(session.account.callingKey.id, keys ?? [])

  return (
    <section aria-labelledby="keys">
      <CreateKey
        onCreated={(made) => {
          setSecret({ secret: made, what: 'The new key is made.' })
          void load()
        }}
      />
      {secret && <Secret {...secret} />}
      <h2 id="keys">Keys</h2>
      <ErrorNote error={error} />
      <label>
        Grace period when rolling
        <select value={grace} onChange={(e) => setGrace(Number(e.currentTarget.value))}>
          {GRACES.map((g) => (
            <option key={g.value} value={g.value}>
              {g.label}
            </option>
          ))}
        </select>
      </label>
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Prefix</th>
            <th scope="col">Status</th>
            <th scope="col">Scopes</th>
            <th scope="col">Expires</th>
            <th scope="col">Last used</th>
            <th scope="col">Made by</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {keys?.map((key) => (
            <tr key={key.id} data-key-id={key.id}>
              <td>{key.name}</td>
              <td>{key.prefix}</td>
              <td>{key.status}</td>
              <td>{key.scopes.join(', ')}</td>
              <td>{formatTime(key.expiresAt)}</td>
              <td>{formatTime(key.lastUsedAt)}</td>
              <td>{key.createdBy === null ? 'the operator' : `key ${key.createdBy}`}</td>
              <td>
                <ActionButton operation="getUsageHistory" label={`Usage of key ${key.name} (${key.prefix})`} onClick={() => setUsageOf(usageOf?.id === key.id ? undefined : key)}>
                  Usage
                </ActionButton>{' '}
                {key.status !== 'revoked' && (
                  <>
                    {rollable.has(key.id) && (
                      <>
                        <ActionButton
                          operation="rollKey"
                          label={`Roll key ${key.name} (${key.prefix})`}
                          onClick={() =>
                            act(async () => {
                              const rolled = await api.rollKey(key.id, grace)
                              if (rolled.key) setSecret({ secret: rolled.key, what: `Key ${key.name} is rolled: this is its new secret.` })
                            })
                          }
                        >
                          Roll
                        </ActionButton>{' '}
                      </>
                    )}
                    <ActionButton operation="updateKey" label={`${key.status === 'disabled' ? 'Enable' : 'Disable'} key ${key.name} (${key.prefix})`} onClick={() => act(() => api.setKeyEnabled(key.id, key.status === 'disabled'))}>
                      {key.status === 'disabled' ? 'Enable' : 'Disable'}
                    </ActionButton>{' '}
                    <ActionButton operation="revokeKey" label={`Revoke key ${key.name} (${key.prefix})`} onClick={() => act(() => api.revokeKey(key.id))}>
                      Revoke
                    </ActionButton>
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {usageOf && <KeyUsage apiKey={usageOf} />}
    </section>
  )
}

const DAY = 86_400_000

/** One key's requests over the last 7 days, by outcome (GET /v1/usage/history?keyId=…). */
function KeyUsage({ apiKey }: { apiKey: ApiKey }) {
  const { api } = useSession()
  const [buckets, setBuckets] = useState<UsageBucket[]>()
  const [error, setError] = useState<unknown>()
  useEffect(() => {
    const to = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000)
    api.getUsageHistory(new Date(to.getTime() - 7 * DAY), to, apiKey.id).then(setBuckets, setError)
  }, [apiKey.id])
  const total = (outcome: (typeof USAGE_OUTCOMES)[number]) => buckets?.reduce((sum, bucket) => sum + bucket[outcome], 0) ?? 0
  return (
    <section aria-labelledby="key-usage">
      <h3 id="key-usage">
        Requests of key {apiKey.name} ({apiKey.prefix}…) over the last 7 days
      </h3>
      <ErrorNote error={error} />
      {buckets && (
        <table>
          <thead>
            <tr>
              {USAGE_OUTCOMES.map((outcome) => (
                <th scope="col" key={outcome}>
                  {outcome.replace('_', ' ')}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            <tr>
              {USAGE_OUTCOMES.map((outcome) => (
                <td key={outcome} data-testid={`key-usage-${outcome}`}>
                  {total(outcome)}
                </td>
              ))}
            </tr>
          </tbody>
        </table>
      )}
    </section>
  )
}

function CreateKey({ onCreated }: { onCreated: (secret: string) => void }) {
  const session = useSession()
  const [name, setName] = useState('')
  const [scopes, setScopes] = useState<Scope[]>(['pets:read'])
  const [expiresIn, setExpiresIn] = useState('')
  const [error, setError] = useState<unknown>()
  const missing = missingScope(session, 'createKey')
  // Only scopes this key has can be given (the API refuses the others).
  const offered = SCOPES.filter((scope) => session.scopes.includes(scope))
  return (
    <form
      aria-label="Create a key"
      onSubmit={async (event) => {
        event.preventDefault()
        try {
          const made = await session.api.createKey({ ...(name ? { name } : {}), scopes, ...(expiresIn ? { expiresIn } : {}) })
          setError(undefined)
          if (made.key) onCreated(made.key)
        } catch (failure) {
          setError(failure)
        }
      }}
    >
      <label>
        Name
        <input value={name} maxLength={100} disabled={missing !== undefined} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <fieldset disabled={missing !== undefined}>
        <legend>Scopes</legend>
        {offered.map((scope) => (
          <label key={scope} class="inline">
            <input
              type="checkbox"
              checked={scopes.includes(scope)}
              onChange={(e) => setScopes(e.currentTarget.checked ? [...scopes, scope] : scopes.filter((s) => s !== scope))}
            />
            {scope}
          </label>
        ))}
      </fieldset>
      <label>
        Expires
        <select value={expiresIn} disabled={missing !== undefined} onChange={(e) => setExpiresIn(e.currentTarget.value)}>
          {EXPIRIES.map((option) => (
            <option key={option.value} value={option.value}>
              {option.label}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" disabled={missing !== undefined || scopes.length === 0} title={missing && `Needs the ${missing} scope`}>
        Create key{missing && <span class="needs"> (needs {missing})</span>}
      </button>
      <ErrorNote error={error} />
    </form>
  )
}
