// The usage store, written once in Kysely for both databases (usage-store.ts). Both
// take INSERT … ON CONFLICT DO UPDATE, so instances add to a count without reading it.
import type { Kysely } from 'kysely'
import type { Database } from '../schema.js'
import type { UsageOutcome, UsageStore } from '../usage-store.js'

export function createUsageStore(db: Kysely<Database>): UsageStore {
  return {
    async add(rows) {
      if (rows.length === 0) return
      await db
        .insertInto('api_key_usage')
        .values(rows.map((row) => ({ api_key_id: row.apiKeyId, hour: row.hour, outcome: row.outcome, requests: row.requests })))
        .onConflict((conflict) =>
          conflict.columns(['api_key_id', 'hour', 'outcome']).doUpdateSet((eb) => ({ requests: eb('api_key_usage.requests', '+', eb.ref('excluded.requests')) })),
        )
        .execute()
    },

    async history(apiKeyId, from, to) {
      const rows = await db
        .selectFrom('api_key_usage')
        .selectAll()
        .where('api_key_id', '=', apiKeyId)
        .where('hour', '>=', from)
        .where('hour', '<', to)
        .orderBy('hour')
        .orderBy('outcome')
        .execute()
      return rows.map((row) => ({ apiKeyId: row.api_key_id, hour: row.hour, outcome: row.outcome as UsageOutcome, requests: row.requests }))
    },

    async purge(before) {
      await db.deleteFrom('api_key_usage').where('hour', '<', before).execute()
    },
  }
}
