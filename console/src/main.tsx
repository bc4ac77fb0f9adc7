// The console's shell: sign in with a key, then the pages, one per part of the API,
// chosen by the URL's hash (#/pets), so the server serves one page for all of them.
import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { createApi, PetstoreError } from './api.js'
import { forgetKey, rememberedKey, rememberKey } from './session.js'
import { describeError, formatTime, SessionContext, type Session } from './ui.js'
import { Overview } from './pages/overview.js'
import { Pets } from './pages/pets.js'
import { Orders } from './pages/orders.js'
import { Keys } from './pages/keys.js'
import { Webhooks } from './pages/webhooks.js'
import './style.css'

const PAGES = {
  overview: { title: 'Overview', Page: Overview },
  pets: { title: 'Pets', Page: Pets },
  orders: { title: 'Orders', Page: Orders },
  keys: { title: 'Keys', Page: Keys },
  webhooks: { title: 'Webhooks', Page: Webhooks },
} as const
type PageName = keyof typeof PAGES

const pageOf = (hash: string): PageName => {
  const name = hash.replace(/^#\/?/, '')
  return Object.hasOwn(PAGES, name) ? (name as PageName) : 'overview'
}

/** Signs in with a key: the session once the account, and with it the key's own scopes, is read. */
async function openSession(apiKey: string, signOut: () => void): Promise<Session> {
  const api = createApi(apiKey)
  const account = await api.getAccount()
  return { api, account, scopes: account.callingKey.scopes, signOut }
}

/**
 * A banned key is refused everything (429 key_banned), with Retry-After saying for how
 * long: the sign-in page says until when instead of the bare 429.
 */
async function explainRefusal(_apiKey: string, failure: unknown): Promise<unknown> {
  if (!(failure instanceof PetstoreError) || failure.code !== 'key_banned' || failure.retryAfter === undefined) return failure
  // The address's ban, not the key's: the server's message says so.
  if (failure.message.startsWith('This address')) return failure
  const bannedUntil = new Date(Date.now() + failure.retryAfter * 1000).toISOString()
  return new Error(`This key is banned until ${formatTime(bannedUntil)}, for sending too many requests while rate limited. Try again then.`)
}

function SignIn({ onKey, error }: { onKey: (key: string) => void; error: unknown }) {
  const [key, setKey] = useState('')
  return (
    <main class="sign-in">
      <h1>Pet Store console</h1>
      <form
        onSubmit={(event) => {
          event.preventDefault()
          if (key.trim() !== '') onKey(key.trim())
        }}
      >
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autocomplete="off" spellcheck={false} value={key} onInput={(event) => setKey(event.currentTarget.value)} />
        <button type="submit">Sign in</button>
      </form>
      <p class="note">The key stays in this tab (sessionStorage) until you sign out or close it, and is sent only to this server, in the Authorization header.</p>
      {error !== undefined && (
        <p class="error" role="alert">
          {describeError(error)}
        </p>
      )}
    </main>
  )
}

function App() {
  const [session, setSession] = useState<Session | undefined>()
  const [error, setError] = useState<unknown>()
  const [loading, setLoading] = useState(rememberedKey() !== undefined)
  const [page, setPage] = useState<PageName>(pageOf(location.hash))

  useEffect(() => {
    const onHash = () => setPage(pageOf(location.hash))
    addEventListener('hashchange', onHash)
    return () => removeEventListener('hashchange', onHash)
  }, [])

  const signOut = () => {
    forgetKey()
    setSession(undefined)
    setError(undefined)
  }

  const signIn = async (key: string) => {
    setLoading(true)
    try {
      const opened = await openSession(key, signOut)
      rememberKey(key)
      setSession(opened)
      setError(undefined)
    } catch (failure) {
      forgetKey()
      setError(await explainRefusal(key, failure))
    } finally {
      setLoading(false)
    }
  }

  useEffect(() => {
    const key = rememberedKey()
    if (key !== undefined) void signIn(key)
  }, [])

  useEffect(() => {
    document.title = session ? `${PAGES[page].title} · Pet Store console` : 'Pet Store console'
  }, [page, session])

  if (loading) return <main aria-busy="true">Signing in…</main>
  if (session === undefined) return <SignIn onKey={signIn} error={error} />

  const { Page } = PAGES[page]
  return (
    <SessionContext.Provider value={session}>
      <header>
        <nav aria-label="Pages">
          <ul>
            {(Object.keys(PAGES) as PageName[]).map((name) => (
              <li key={name}>
                <a href={`#/${name}`} aria-current={name === page ? 'page' : undefined}>
                  {PAGES[name].title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span data-testid="account">
            {session.account.name} · {session.account.plan} plan
          </span>
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main>
        <h1>{PAGES[page].title}</h1>
        <Page />
      </main>
    </SessionContext.Provider>
  )
}

render(<App />, document.getElementById('app')!)
