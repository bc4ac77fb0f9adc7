// LISTEN for the event triggers' NOTIFY on a connection of its own (a pooled one
// would be handed to other queries). When it drops, it is opened again, after 100 ms
// and then twice as long after each failed try, up to 5 s between tries; meanwhile
// the dispatchers poll every second, so a notification missed in the gap costs at
// most that second.
import pg from 'pg'
import { DELIVERIES_CHANNEL } from '../migrations/2026-11-24-007-events-and-webhooks.js'
import type { Watch } from '../sql/delivery-queue.js'

const LISTEN = `LISTEN ${DELIVERIES_CHANNEL}`
const FIRST_RETRY_MS = 100
const MAX_RETRY_MS = 5_000
// A connection that only listens sends nothing, so one lost without a word (a NAT or
// firewall that forgot it) would never be noticed: it says LISTEN again this often,
// a no-op for PostgreSQL, and a connection that cannot answer it in time is lost.
const HEARTBEAT_MS = 5_000
const ANSWER_TIMEOUT_MS = 5_000
// A reconnect that hangs (a black-holed address) must fail and try again, not wait forever.
const CONNECT_TIMEOUT_MS = 2_000

/**
 * Resolves once the first LISTEN is in place, or rejects if it cannot be (the
 * dispatcher then polls alone). After that, every loss and failed try to reconnect
 * is reported to `onError` and tried again, until the returned function stops it: a
 * stopped watch never connects again.
 */
export function listenForDeliveries(url: string): Watch {
  return async (listener, onError) => {
    let stopped = false
    let current: pg.Client | undefined
    let retry: NodeJS.Timeout | undefined
    let retryMs = FIRST_RETRY_MS

    /** A connection that LISTENs; `onLost` is called once if it is lost after that. */
    async function listen(onLost: (error: Error) => void): Promise<void> {
      const client = new pg.Client({ connectionString: url, keepAlive: true, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, query_timeout: ANSWER_TIMEOUT_MS })
      current = client
      // Until LISTEN is in place a failure is this attempt's (it rejects); after, the
      // first sign of loss hands over to `onLost`, once.
      let listening = false
      let lost = false
      let heartbeat: NodeJS.Timeout | undefined
      const lose = (error: Error) => {
        if (!listening || lost) return
        lost = true
        clearTimeout(heartbeat)
        client.end().catch(() => {})
        if (current === client) current = undefined
        if (!stopped) onLost(error)
      }
      client.on('notification', () => listener())
      // Kept for the client's whole life: one loss can emit 'error' twice (the server's
      // FATAL, then the end of the socket), and an 'error' nobody hears ends the process.
      client.on('error', lose)
      client.on('end', () => lose(new Error('the LISTEN connection ended')))
      try {
        await client.connect()
        await client.query(LISTEN)
      } catch (error) {
        if (current === client) current = undefined
        await client.end().catch(() => {})
        throw error
      }
      listening = true
      if (stopped) {
        await client.end().catch(() => {})
        return
      }
      const beat = () => {
        if (lost) return
        heartbeat = setTimeout(() => {
          client.query(LISTEN).then(beat, (error: Error) => lose(error))
        }, HEARTBEAT_MS)
        // The dispatcher's own timer decides whether the process stays up.
        heartbeat.unref()
      }
      beat()
    }

    function reconnectLater(error: Error) {
      onError(error)
      retry = setTimeout(() => {
        retry = undefined
        if (stopped) return
        listen(reconnectLater).then(
          () => {
            retryMs = FIRST_RETRY_MS
            // Events written while nobody listened are due now, not at the next poll.
            if (!stopped) listener()
          },
          (failed: unknown) => {
            retryMs = Math.min(retryMs * 2, MAX_RETRY_MS)
            if (!stopped) reconnectLater(failed instanceof Error ? failed : new Error(String(failed)))
          },
        )
      }, retryMs)
      retry.unref()
    }

    await listen(reconnectLater)
    return async () => {
      stopped = true
      clearTimeout(retry)
      await current?.end().catch(() => {})
    }
  }
}
