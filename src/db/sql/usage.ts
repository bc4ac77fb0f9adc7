// The usage store, written once in Kysely for both databases (usage-store.ts). Both
// take INSERT … ON CONFLICT DO UPDATE, so instances add to a count without reading it.
import type { Kysely } from 'kysely'
import type { Database } from '../schema.js'
import type { UsageStore } from '../usage-store.js'
import type { UsageOutcome } from '../../vocabulary/usage.js'
import { deleteInBatches } from './in-batches.js'

/** Hours of a key's counts the purge deletes a statement. */
const PURGE_BATCH = 1_000

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

    async history({ accountId, keyId }, from, to) {
      let query = db
        .selectFrom('api_key_usage as u')
        .innerJoin('api_keys as k', 'k.id', 'u.api_key_id')
        .select(['u.hour', 'u.outcome', (eb) => eb.fn.sum<number | string>('u.requests').as('requests')])
        .where('k.account_id', '=', accountId)
        .where('u.hour', '>=', from)
        .where('u.hour', '<', to)
      if (keyId !== undefined) query = query.where('u.api_key_id', '=', keyId)
      const rows = await query.groupBy(['u.hour', 'u.outcome']).orderBy('u.hour').orderBy('u.outcome').execute()
      return rows.map((row) => ({ hour: row.hour, outcome: row.outcome as UsageOutcome, requests: Number(row.requests) }))
    },

    async purge(before) {
      // In batches (in-batches.ts): an hour of every key's counts ages out at once.
      await deleteInBatches(PURGE_BATCH, async (limit) => {
        const old = db.selectFrom('api_key_usage').select(['api_key_id', 'hour', 'outcome']).where('hour', '<', before).limit(limit).$asTuple('api_key_id', 'hour', 'outcome')
        const result = await db.deleteFrom('api_key_usage').where((eb) => eb(eb.refTuple('api_key_id', 'hour', 'outcome'), 'in', old)).executeTakeFirst()
        return result.numDeletedRows
      })
    },
  }
}
