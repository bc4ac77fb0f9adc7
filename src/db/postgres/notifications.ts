// LISTEN for the event triggers' NOTIFY on a connection of its own (a pooled one
// would be handed to other queries). If it drops, dispatchers still poll every second.
import pg from 'pg'
import { DELIVERIES_CHANNEL } from '../migrations/2026-11-24-007-events-and-webhooks.js'
import type { Watch } from '../sql/webhooks.js'

export function listenForDeliveries(url: string): Watch {
  return async (listener, onError) => {
    const client = new pg.Client({ connectionString: url, keepAlive: true })
    client.on('notification', () => listener())
    client.on('error', (error) => onError(error))
    await client.connect()
    await client.query(`LISTEN ${DELIVERIES_CHANNEL}`)
    return async () => {
      await client.end().catch(() => {})
    }
  }
}
