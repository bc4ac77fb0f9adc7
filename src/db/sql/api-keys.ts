// The API keys and accounts stores, written once in Kysely for both databases
// (api-keys-store.ts). A key is always read with its account: one join.
import { sql, type Kysely, type Selectable, type Updateable } from 'kysely'
import type { AccountsTable, ApiKeysTable, Database } from '../schema.js'
import type { AccountsStore, ApiKeysStore, NewStoredApiKey, StoredAccount, StoredApiKey } from '../api-keys-store.js'
import { completeClaimIn } from './idempotency-claims.js'

export function createApiKeysStore(db: Kysely<Database>): ApiKeysStore {
  return {
    async insert(key, now, completion) {
      if (completion || typeof key.account !== 'number') {
        return db.transaction().execute(async (trx) => {
          const stored = await insertKey(trx, key, now)
          if (completion) await completeClaimIn(trx, completion, stored)
          return stored
        })
      }
      return insertKey(db, key, now)
    },

    async findByHash(hash) {
      const row = await withAccount(db).where('k.key_hash', '=', hash).executeTakeFirst()
      return row && toStored(row)
    },

    findById: (id) => findKey(db, id),

    async page(accountId, afterId, limit) {
      let query = withAccount(db).where('k.id', '>', afterId)
      if (accountId !== undefined) query = query.where('k.account_id', '=', accountId)
      return (await query.orderBy('k.id').limit(limit).execute()).map(toStored)
    },

    async update(id, changes) {
      const set: Updateable<ApiKeysTable> = {}
      if (changes.name !== undefined) set.name = changes.name
      if (changes.scopes !== undefined) set.scopes = changes.scopes
      if (changes.disabledAt !== undefined) set.disabled_at = changes.disabledAt
      if (changes.disabledByOperator !== undefined) set.disabled_by_operator = changes.disabledByOperator ? 1 : 0
      if (Object.keys(set).length > 0) await db.updateTable('api_keys').set(set).where('id', '=', id).execute()
      return findKey(db, id)
    },

    async roll(id, next, oldExpiresAt, now) {
      return db
        .transaction()
        .execute(async (trx) => {
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
            .where('replaced_by', 'is', null)
            .returning('id')
            .executeTakeFirst()
          if (!old) throw new NoSuchKey()
          return { old: (await findKey(trx, id))!, next: inserted }
        })
        .catch((error: unknown) => {
          if (error instanceof NoSuchKey) return undefined
          throw error
        })
    },

    async revoke(id, now, cascade) {
      return db.transaction().execute(async (trx) => {
        if (!(await trx.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst())) return undefined
        // The key and, with cascade, every key it made, and every key those made; and
        // the keys it replaced (a roll), with what they made: a roll must not hide a
        // leaked key's children from the cascade of its successor.
        const { rows } = cascade
          ? await sql<{ id: number }>`with recursive made (id) as (
                select cast(${id} as bigint)
                union
                select k.id from api_keys k join made m on k.created_by = m.id or k.replaced_by = m.id
              )
              update api_keys set revoked_at = ${now} where id in (select id from made) and revoked_at is null returning id`.execute(trx)
          : await sql<{ id: number }>`update api_keys set revoked_at = ${now} where id = ${id} and revoked_at is null returning id`.execute(trx)
        return rows.map((row) => Number(row.id)).sort((a, b) => a - b)
      })
    },

    async ancestors(id) {
      // Each step: the key's maker (by its primary key) and the key it replaced (by the replaced_by index).
      const { rows } = await sql<{ id: number | string }>`with recursive up (id) as (
          select cast(${id} as bigint)
          union
          select k.id from api_keys k join up u on k.id = (select c.created_by from api_keys c where c.id = u.id) or k.replaced_by = u.id
        )
        select id from up where id <> ${id}`.execute(db)
      return rows.map((row) => Number(row.id)).sort((a, b) => a - b)
    },

    async touch(id, now) {
      await db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', id).execute()
    },
  }
}

export function createAccountsStore(db: Kysely<Database>): AccountsStore {
  return {
    async findById(id) {
      const row = await db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst()
      return row && toAccount(row)
    },

    async page(afterId, limit) {
      return (await db.selectFrom('accounts').selectAll().where('id', '>', afterId).orderBy('id').limit(limit).execute()).map(toAccount)
    },

    async update(id, changes) {
      const set: Updateable<AccountsTable> = {}
      if (changes.name !== undefined) set.name = changes.name
      if (changes.plan !== undefined) set.plan = changes.plan
      if (changes.custom !== undefined) {
        set.per_minute = changes.custom?.perMinute ?? null
        set.per_day = changes.custom?.perDay ?? null
      }
      if (changes.disabledAt !== undefined) set.disabled_at = changes.disabledAt
      if (Object.keys(set).length === 0) return this.findById(id)
      const row = await db.updateTable('accounts').set(set).where('id', '=', id).returningAll().executeTakeFirst()
      return row && toAccount(row)
    },

    async keyCounts(ids) {
      if (ids.length === 0) return new Map()
      const rows = await db
        .selectFrom('api_keys')
        .select(['account_id', (eb) => eb.fn.countAll<number | string>().as('count')])
        .where('account_id', 'in', [...new Set(ids)])
        .groupBy('account_id')
        .execute()
      return new Map(rows.map((row) => [row.account_id, Number(row.count)]))
    },
  }
}

const withAccount = (db: Kysely<Database>) =>
  db
    .selectFrom('api_keys as k')
    .innerJoin('accounts as a', 'a.id', 'k.account_id')
    .selectAll('k')
    .select(['a.name as account_name', 'a.plan', 'a.per_minute', 'a.per_day', 'a.created_at as account_created_at', 'a.disabled_at as account_disabled_at'])

type KeyRow = Selectable<ApiKeysTable> & {
  account_name: string
  plan: string
  per_minute: number | null
  per_day: number | null
  account_created_at: number
  account_disabled_at: number | null
}

async function findKey(db: Kysely<Database>, id: number): Promise<StoredApiKey | undefined> {
  const row = await withAccount(db).where('k.id', '=', id).executeTakeFirst()
  return row && toStored(row)
}

async function insertKey(db: Kysely<Database>, key: NewStoredApiKey, now: number): Promise<StoredApiKey> {
  let accountId = key.account
  if (typeof accountId !== 'number') {
    const { name, plan, custom } = accountId
    const account = await db
      .insertInto('accounts')
      .values({ name, plan, per_minute: custom?.perMinute ?? null, per_day: custom?.perDay ?? null, created_at: now })
      .returning('id')
      .executeTakeFirstOrThrow()
    accountId = account.id
  }
  const row = await db
    .insertInto('api_keys')
    .values({
      account_id: accountId,
      name: key.name,
      prefix: key.prefix,
      key_hash: key.hash,
      scopes: key.scopes,
      expires_at: key.expiresAt,
      disabled_at: key.disabledAt,
      disabled_by_operator: key.disabledByOperator ? 1 : 0,
      created_by: key.createdBy,
      created_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  const stored = await findKey(db, row.id)
  if (!stored) throw new Error(`key ${row.id} was inserted for account ${accountId}, which does not exist`)
  return stored
}

function toAccount(row: Selectable<AccountsTable>): StoredAccount {
  return {
    id: row.id,
    name: row.name,
    plan: row.plan,
    custom: row.per_minute === null || row.per_day === null ? null : { perMinute: row.per_minute, perDay: row.per_day },
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
  }
}

function toStored(row: KeyRow): StoredApiKey {
  return {
    id: row.id,
    account: toAccount({
      id: row.account_id,
      name: row.account_name,
      plan: row.plan,
      per_minute: row.per_minute,
      per_day: row.per_day,
      created_at: row.account_created_at,
      disabled_at: row.account_disabled_at,
    }),
    name: row.name,
    prefix: row.prefix,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
    scopes: row.scopes,
    expiresAt: row.expires_at,
    disabledAt: row.disabled_at,
    disabledByOperator: Number(row.disabled_by_operator) === 1,
    replacedBy: row.replaced_by,
    createdBy: row.created_by,
  }
}

/** Rolls back a roll whose old key is gone or revoked. */
class NoSuchKey extends Error {}
