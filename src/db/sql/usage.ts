// The usage store, written once in Kysely for both databases (usage-store.ts). Both
// take INSERT … ON CONFLICT DO UPDATE, so instances add to a count without reading it.
import type { Kysely } from 'kysely'
import type { Database } from '../schema.js'
import type { UsageStore } from '../usage-store.js'
import type { UsageOutcome } from '../../vocabulary/usage.js'
import { deleteInBatches, writeInBatches } from './in-batches.js'

/** Hours of a key's counts the purge deletes a statement. */
const PURGE_BATCH = 1_000

/** Rows an INSERT writes: 4 parameters a row, well under either database's limit a statement. */
const ADD_BATCH = 1_000

export function createUsageStore(db: Kysely<Database>): UsageStore {
  return {
    async add(rows) {
      if (rows.length === 0) return
      const byAccount = new Map<string, { account_id: number; hour: number; outcome: string; requests: number }>()
      for (const row of rows) {
        const at = `${row.accountId}:${row.hour}:${row.outcome}`
        const sum = byAccount.get(at)
        if (sum) sum.requests += row.requests
        else byAccount.set(at, { account_id: row.accountId, hour: row.hour, outcome: row.outcome, requests: row.requests })
      }
      // In one order on every instance, so that two flushes lock the same rows in the same
      // order (PostgreSQL: two instances' flushes deadlocked on account_usage).
      const keys = rows
        .map((row) => ({ api_key_id: row.apiKeyId, hour: row.hour, outcome: row.outcome, requests: row.requests }))
        .sort((a, b) => a.api_key_id - b.api_key_id || a.hour - b.hour || a.outcome.localeCompare(b.outcome))
      const accounts = [...byAccount.values()].sort((a, b) => a.account_id - b.account_id || a.hour - b.hour || a.outcome.localeCompare(b.outcome))
      // One transaction: a failed write is added again whole by the recorder, never twice in part.
      await db.transaction().execute(async (trx) => {
        await writeInBatches(keys, ADD_BATCH, (batch) =>
          trx
            .insertInto('api_key_usage')
            .values(batch)
            .onConflict((conflict) => conflict.columns(['api_key_id', 'hour', 'outcome']).doUpdateSet((eb) => ({ requests: eb('api_key_usage.requests', '+', eb.ref('excluded.requests')) })))
            .execute(),
        )
        await writeInBatches(accounts, ADD_BATCH, (batch) =>
          trx
            .insertInto('account_usage')
            .values(batch)
            .onConflict((conflict) => conflict.columns(['account_id', 'hour', 'outcome']).doUpdateSet((eb) => ({ requests: eb('account_usage.requests', '+', eb.ref('excluded.requests')) })))
            .execute(),
        )
      })
    },

    async history({ accountId, keyId }, from, to) {
      // An account's reads its own rows, at most hours × outcomes, never its keys'.
      const rows =
        keyId === undefined
          ? await db
              .selectFrom('account_usage')
              .select(['hour', 'outcome', 'requests'])
              .where('account_id', '=', accountId)
              .where('hour', '>=', from)
              .where('hour', '<', to)
              .orderBy('hour')
              .orderBy('outcome')
              .execute()
          : await db
              .selectFrom('api_key_usage as u')
              .innerJoin('api_keys as k', 'k.id', 'u.api_key_id')
              .select(['u.hour', 'u.outcome', 'u.requests'])
              .where('k.account_id', '=', accountId)
              .where('u.api_key_id', '=', keyId)
              .where('u.hour', '>=', from)
              .where('u.hour', '<', to)
              .orderBy('u.hour')
              .orderBy('u.outcome')
              .execute()
      return rows.map((row) => ({ hour: Number(row.hour), outcome: row.outcome as UsageOutcome, requests: Number(row.requests) }))
    },

    async purge(before) {
      // In batches (in-batches.ts): an hour of every key's counts ages out at once.
      await deleteInBatches(PURGE_BATCH, async (limit) => {
        const old = db.selectFrom('api_key_usage').select(['api_key_id', 'hour', 'outcome']).where('hour', '<', before).limit(limit).$asTuple('api_key_id', 'hour', 'outcome')
        const result = await db.deleteFrom('api_key_usage').where((eb) => eb(eb.refTuple('api_key_id', 'hour', 'outcome'), 'in', old)).executeTakeFirst()
        return result.numDeletedRows
      })
      await deleteInBatches(PURGE_BATCH, async (limit) => {
        const old = db.selectFrom('account_usage').select(['account_id', 'hour', 'outcome']).where('hour', '<', before).limit(limit).$asTuple('account_id', 'hour', 'outcome')
        const result = await db.deleteFrom('account_usage').where((eb) => eb(eb.refTuple('account_id', 'hour', 'outcome'), 'in', old)).executeTakeFirst()
        return result.numDeletedRows
      })
    },
  }
}
