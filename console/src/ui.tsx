// The pieces every page shares: the signed-in session, buttons that know the scope
// they need, and how an API error is told to a person. Every value from the API is
// rendered as a JSX text child (escaped by Preact), never as HTML.
import { createContext, type ComponentChildren } from 'preact'
import { useContext, useState } from 'preact/hooks'
import { NEEDS, PetstoreError, type Account, type Api } from './api.js'
import type { Scope } from '../../src/vocabulary/scopes.js'

export interface Session {
  api: Api
  /** The account, and the calling key with its scopes (`account.callingKey`). */
  account: Account
  /** The key's scopes: what the console offers. */
  scopes: readonly Scope[]
  signOut: () => void
}

export const SessionContext = createContext<Session | undefined>(undefined)

export function useSession(): Session {
  const session = useContext(SessionContext)
  if (session === undefined) throw new Error('useSession outside a signed-in page')
  return session
}

/** The scope the operation needs that the key lacks, or undefined when it may call it. */
export function missingScope(session: Session, operation: keyof typeof NEEDS): Scope | undefined {
  const needed = NEEDS[operation]
  return needed === null || session.scopes.includes(needed) ? undefined : needed
}

/** What a person should read for a failed call. */
export function describeError(error: unknown): string {
  if (error instanceof PetstoreError) {
    if (error.code === 'precondition_failed') return 'Someone else changed this pet after you opened it. Your changes were not saved: close the form, look at the pet as it is now, and edit again.'
    // A detail the message already says (a single field's problem) is not said twice.
    const details = error.details
      ?.filter((d) => !error.message.includes(d.message))
      .map((d) => `${d.field}: ${d.message}`)
      .join('; ')
    return `${error.message}${details ? ` (${details})` : ''} [${error.code}, ${error.status}]`
  }
  return error instanceof Error ? error.message : String(error)
}

export function ErrorNote({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null
  return (
    <p class="error" role="alert">
      {describeError(error)}
    </p>
  )
}

/**
 * A button for one operation: disabled, saying which scope it needs, when the key
 * lacks it, and while its call runs. `label` names the action for screen readers when
 * the text alone would not (it starts with the text, as WCAG 2.5.3 asks).
 */
export function ActionButton(props: { operation: keyof typeof NEEDS; onClick: () => void | Promise<void>; children: ComponentChildren; label?: string }) {
  const session = useSession()
  const missing = missingScope(session, props.operation)
  const [busy, setBusy] = useState(false)
  return (
    <button
      type="button"
      aria-label={props.label}
      disabled={missing !== undefined || busy}
      title={missing === undefined ? undefined : `Needs the ${missing} scope`}
      onClick={async () => {
        setBusy(true)
        try {
          await props.onClick()
        } finally {
          setBusy(false)
        }
      }}
    >
      {props.children}
      {missing !== undefined && <span class="needs"> (needs {missing})</span>}
    </button>
  )
}

/** A section the key may not read at all: says which scope it needs instead. */
export function NeedsScope({ operation, children }: { operation: keyof typeof NEEDS; children: ComponentChildren }) {
  const session = useSession()
  const missing = missingScope(session, operation)
  if (missing !== undefined) return <p class="note">This key cannot see this: it needs the {missing} scope.</p>
  return <>{children}</>
}

export const formatTime = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—')

/** What the last action did: its message, or the error it met. */
export function Outcome({ done, error }: { done: string | undefined; error: unknown }) {
  return (
    <>
      {done && (
        <p class="ok" role="status">
          {done}
        </p>
      )}
      <ErrorNote error={error} />
    </>
  )
}

/** The "Status" filter of a list: any, or one of `statuses`. */
export function StatusFilter<T extends string>({ statuses, value, onChange }: { statuses: readonly T[]; value: T | ''; onChange: (status: T | '') => void }) {
  return (
    <label>
      Status
      <select value={value} onChange={(event) => onChange(event.currentTarget.value as T | '')}>
        <option value="">any</option>
        {statuses.map((s) => (
          <option key={s} value={s}>
            {s}
          </option>
        ))}
      </select>
    </label>
  )
}

/**
 * The cursors of a list paged with the API's cursor: those of the pages before this
 * one (to go back) and this page's. `reset` goes back to the first page (a new filter).
 */
export function useCursors() {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined])
  return {
    cursor: cursors[cursors.length - 1],
    reset: () => setCursors([undefined]),
    back: cursors.length < 2 ? undefined : () => setCursors(cursors.slice(0, -1)),
    forward: (next: string) => setCursors([...cursors, next]),
  }
}

/** Previous and next page buttons of a list paged by useCursors, for a page whose `nextCursor` the API gave. */
export function Pager({ label, class: className, pages, nextCursor }: { label: string; class?: string; pages: ReturnType<typeof useCursors>; nextCursor: string | undefined }) {
  return (
    <nav aria-label={label} class={className}>
      <button type="button" disabled={pages.back === undefined} onClick={pages.back}>
        Previous page
      </button>{' '}
      <button type="button" disabled={nextCursor === undefined} onClick={() => nextCursor !== undefined && pages.forward(nextCursor)}>
        Next page
      </button>
    </nav>
  )
}
