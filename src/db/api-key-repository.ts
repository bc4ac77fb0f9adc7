import type { Kysely, Selectable } from 'kysely'
import type { ApiKeysTable, Database } from './schema.js'
import { limitsFor, type Limits, type Plan } from '../api-keys/plans.js'

/** An API key as the service knows it: never the secret, only its hash and display prefix. */
export interface ApiKeyRecord {
  id: number
  name: string
  plan: Plan
  /** The non-secret start of the key, e.g. `ps_test_AbCd`. */
  prefix: string
  limits: Limits
  createdAt: string
  lastUsedAt: string | null
  revokedAt: string | null
}

export interface NewApiKey {
  name: string
  plan: Plan
  prefix: string
  hash: string
  custom: Limits | null
}

export type ApiKeyRepository = ReturnType<typeof createApiKeyRepository>

export function createApiKeyRepository(db: Kysely<Database>) {
  return {
    async insert(key: NewApiKey, now: number): Promise<ApiKeyRecord> {
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
      return toRecord(row)
    },

    async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
      const row = await db.selectFrom('api_keys').selectAll().where('key_hash', '=', hash).executeTakeFirst()
      return row && toRecord(row)
    },

    async findById(id: number): Promise<ApiKeyRecord | undefined> {
      const row = await db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst()
      return row && toRecord(row)
    },

    async list(): Promise<ApiKeyRecord[]> {
      const rows = await db.selectFrom('api_keys').selectAll().orderBy('id').execute()
      return rows.map(toRecord)
    },

    /** Returns false when there is no such key. Revoking twice keeps the first time. */
    async revoke(id: number, now: number): Promise<boolean> {
      const result = await db
        .updateTable('api_keys')
        .set((eb) => ({ revoked_at: eb.fn.coalesce('revoked_at', eb.val(now)) }))
        .where('id', '=', id)
        .executeTakeFirst()
      return result.numUpdatedRows > 0n
    },

    async setPlan(id: number, plan: Plan, custom: Limits | null): Promise<boolean> {
      const result = await db
        .updateTable('api_keys')
        .set({ plan, per_minute: custom?.perMinute ?? null, per_day: custom?.perDay ?? null })
        .where('id', '=', id)
        .executeTakeFirst()
      return result.numUpdatedRows > 0n
    },

    async touch(id: number, now: number): Promise<void> {
      await db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', id).execute()
    },
  }
}

function toRecord(row: Selectable<ApiKeysTable>): ApiKeyRecord {
  const plan = row.plan as Plan
  return {
    id: row.id,
    name: row.name,
    plan,
    prefix: row.prefix,
    limits: limitsFor(plan, { perMinute: row.per_minute ?? undefined, perDay: row.per_day ?? undefined }),
    createdAt: iso(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : iso(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : iso(row.revoked_at),
  }
}

const iso = (ms: number) => new Date(ms).toISOString()
