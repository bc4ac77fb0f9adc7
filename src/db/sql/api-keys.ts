// The API keys store, written once in Kysely for both databases (api-keys-store.ts).
import type { Kysely, Selectable } from 'kysely'
import type { ApiKeysTable, Database } from '../schema.js'
import type { ApiKeysStore, StoredApiKey } from '../api-keys-store.js'

export function createApiKeysStore(db: Kysely<Database>): ApiKeysStore {
  return {
    async insert(key, now) {
      const row = await db
        .insertInto('api_keys')
        .values({
          name: key.name,
          plan: key.plan,
          prefix: key.prefix,
          key_hash: key.hash,
          per_minute: key.custom?.perMinute ?? null,
          per_day: key.custom?.perDay ?? null,
          created_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow()
      return toStored(row)
    },

    async findByHash(hash) {
      const row = await db.selectFrom('api_keys').selectAll().where('key_hash', '=', hash).executeTakeFirst()
      return row && toStored(row)
    },

    async findById(id) {
      const row = await db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst()
      return row && toStored(row)
    },

    async list() {
      const rows = await db.selectFrom('api_keys').selectAll().orderBy('id').execute()
      return rows.map(toStored)
    },

    async revoke(id, now) {
      const result = await db
        .updateTable('api_keys')
        .set((eb) => ({ revoked_at: eb.fn.coalesce('revoked_at', eb.val(now)) }))
        .where('id', '=', id)
        .executeTakeFirst()
      return result.numUpdatedRows > 0n
    },

    async setPlan(id, plan, custom) {
      const result = await db
        .updateTable('api_keys')
        .set({ plan, per_minute: custom?.perMinute ?? null, per_day: custom?.perDay ?? null })
        .where('id', '=', id)
        .executeTakeFirst()
      return result.numUpdatedRows > 0n
    },

    async touch(id, now) {
      await db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', id).execute()
    },
  }
}

function toStored(row: Selectable<ApiKeysTable>): StoredApiKey {
  return {
    id: row.id,
    name: row.name,
    plan: row.plan,
    prefix: row.prefix,
    custom: row.per_minute === null || row.per_day === null ? null : { perMinute: row.per_minute, perDay: row.per_day },
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  }
}
