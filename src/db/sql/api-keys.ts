// The API keys store, written once in Kysely for both databases (api-keys-store.ts).
import type { Kysely, Selectable, Updateable } from 'kysely'
import type { ApiKeysTable, Database } from '../schema.js'
import type { ApiKeysStore, NewStoredApiKey, StoredApiKey } from '../api-keys-store.js'
import { ClaimLostError } from '../idempotency-store.js'

export function createApiKeysStore(db: Kysely<Database>): ApiKeysStore {
  return {
    async insert(key, now, completion) {
      if (completion) {
        return db.transaction().execute(async (trx) => {
          const stored = await insertKey(trx, key, now)
          const { claim, status } = completion.completion
          const done = await trx
            .updateTable('idempotency_keys')
            .set({ locked_until: null, response_status: status, response_body: JSON.stringify(completion.body(stored)) })
            .where('api_key_id', '=', claim.apiKeyId)
            .where('idempotency_key', '=', claim.key)
            .where('locked_until', '=', claim.lockedUntil)
            .executeTakeFirst()
          if (done.numUpdatedRows === 0n) throw new ClaimLostError('the Idempotency-Key claim was taken over')
          return stored
        })
      }
      return insertKey(db, key, now)
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

    async page(afterId, limit) {
      const rows = await db.selectFrom('api_keys').selectAll().where('id', '>', afterId).orderBy('id').limit(limit).execute()
      return rows.map(toStored)
    },

    async update(id, changes) {
      const set: Updateable<ApiKeysTable> = {}
      if (changes.name !== undefined) set.name = changes.name
      if (changes.plan !== undefined) set.plan = changes.plan
      if (changes.custom !== undefined) {
        set.per_minute = changes.custom?.perMinute ?? null
        set.per_day = changes.custom?.perDay ?? null
      }
      if (changes.scopes !== undefined) set.scopes = changes.scopes
      if (changes.disabledAt !== undefined) set.disabled_at = changes.disabledAt
      if (Object.keys(set).length === 0) return this.findById(id)
      const row = await db.updateTable('api_keys').set(set).where('id', '=', id).returningAll().executeTakeFirst()
      return row && toStored(row)
    },

    async roll(id, next, oldExpiresAt, now) {
      return db.transaction().execute(async (trx) => {
        const inserted = await insertKey(trx, next, now)
        // The old key ends at the grace period's end, or at its own expiry if that comes first.
        const old = await trx
          .updateTable('api_keys')
          .set((eb) => ({
            expires_at: eb.case().when('expires_at', 'is', null).then(oldExpiresAt).when('expires_at', '>', oldExpiresAt).then(oldExpiresAt).else(eb.ref('expires_at')).end(),
            replaced_by: inserted.id,
          }))
          .where('id', '=', id)
          .where('revoked_at', 'is', null)
          .returningAll()
          .executeTakeFirst()
        if (!old) throw new NoSuchKey()
        return { old: toStored(old), next: inserted }
      }).catch((error: unknown) => {
        if (error instanceof NoSuchKey) return undefined
        throw error
      })
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

async function insertKey(db: Kysely<Database>, key: NewStoredApiKey, now: number): Promise<StoredApiKey> {
  const row = await db
    .insertInto('api_keys')
    .values({
      name: key.name,
      plan: key.plan,
      prefix: key.prefix,
      key_hash: key.hash,
      per_minute: key.custom?.perMinute ?? null,
      per_day: key.custom?.perDay ?? null,
      scopes: key.scopes,
      expires_at: key.expiresAt,
      counter_identity: key.counterIdentity,
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow()
  return toStored(row)
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
    scopes: row.scopes,
    expiresAt: row.expires_at,
    disabledAt: row.disabled_at,
    counterIdentity: row.counter_identity,
    replacedBy: row.replaced_by,
  }
}

/** Rolls back a roll whose old key is gone or revoked. */
class NoSuchKey extends Error {}
