// The API keys and accounts stores, written once in Kysely for both databases
// (api-keys-store.ts). A key is always read with its account: one join.
import { sql, type Kysely, type Selectable, type Updateable } from 'kysely'
import type { AccountsTable, ApiKeysTable, Database } from '../schema.js'
import { ActingKeyRefused, KeyLimitReached, type AccountsStore, type ApiKeysStore, type NewStoredApiKey, type StoredAccount, type StoredApiKey } from '../api-keys-store.js'
import type { Dialect } from '../dialect.js'
import { completeClaimIn } from './idempotency-claims.js'

export function createApiKeysStore(db: Kysely<Database>, dialect: Dialect): ApiKeysStore {
  /**
   * Refuses the write under way unless the acting key may still act (the service's rule,
   * on the key as it is now). Run after the write's first statement: SQLite then holds the
   * write lock, and no revoke can commit before this does; PostgreSQL takes the key's row
   * in share mode, so that a revoke under way is waited for and then seen, and a revoke
   * that comes later waits for this commit and finds what it made (`revoke` looks again
   * until it finds nothing new).
   */
  async function refuseUnlessActing(trx: Kysely<Database>, { id, mayAct }: NonNullable<NewStoredApiKey['actingKey']>): Promise<void> {
    let query = withAccount(trx).where('k.id', '=', id)
    if (dialect === 'postgres') query = query.forShare('k')
    const row = await query.executeTakeFirst()
    if (!row || !mayAct(toStored(row))) throw new ActingKeyRefused(id)
  }

  async function insertChecked(trx: Kysely<Database>, key: NewStoredApiKey, now: number): Promise<StoredApiKey> {
    const stored = await insertKey(trx, key, now)
    if (key.actingKey !== undefined) await refuseUnlessActing(trx, key.actingKey)
    if (key.liveKeysAtMost !== undefined) {
      // Counted after the insert, this key included. PostgreSQL: the account's row locked,
      // so that two inserts count one after the other, each seeing the other's commit
      // (SQLite's writer is alone already). NO KEY UPDATE, not UPDATE: each insert holds
      // KEY SHARE on it already (the foreign key), which UPDATE would deadlock with.
      if (dialect === 'postgres') await trx.selectFrom('accounts').select('id').where('id', '=', stored.account.id).forNoKeyUpdate().execute()
      const { count } = await trx
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('account_id', '=', stored.account.id)
        .where('revoked_at', 'is', null)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
        .executeTakeFirstOrThrow()
      if (Number(count) > key.liveKeysAtMost) throw new KeyLimitReached(key.liveKeysAtMost)
    }
    return stored
  }

  return {
    async insert(key, now, completion) {
      if (completion || typeof key.account !== 'number' || key.actingKey !== undefined || key.liveKeysAtMost !== undefined) {
        return db.transaction().execute(async (trx) => {
          const stored = await insertChecked(trx, key, now)
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
      if (Object.keys(set).length > 0) {
        let write = db.updateTable('api_keys').set(set).where('id', '=', id)
        if (changes.whileDisabledByOperator !== undefined) write = write.where('disabled_by_operator', '=', changes.whileDisabledByOperator ? 1 : 0)
        await write.execute()
      }
      return findKey(db, id)
    },

    async roll(id, next, oldExpiresAt, now) {
      return db
        .transaction()
        .execute(async (trx) => {
          // The old key's row first (a write that changes nothing): concurrent rolls of one
          // key wait here, one at a time, and each after the first finds it rolled, before
          // it makes a key.
          const held = await trx.updateTable('api_keys').set({ replaced_by: null }).where('id', '=', id).where('revoked_at', 'is', null).where('replaced_by', 'is', null).returning('id').executeTakeFirst()
          if (!held) throw new NoSuchKey()
          const inserted = await insertChecked(trx, next, now)
          // The old key ends at the grace period's end, or at its own expiry if that comes first.
          await trx
            .updateTable('api_keys')
            .set((eb) => ({
              expires_at: eb.case().when('expires_at', 'is', null).then(oldExpiresAt).when('expires_at', '>', oldExpiresAt).then(oldExpiresAt).else(eb.ref('expires_at')).end(),
              replaced_by: inserted.id,
            }))
            .where('id', '=', id)
            .execute()
          return { old: (await findKey(trx, id))!, next: inserted }
        })
        .catch((error: unknown) => {
          if (error instanceof NoSuchKey) return undefined
          throw error
        })
    },

    async revoke(id, now, cascade) {
      return db.transaction().execute(async (trx) => {
        const revoked: number[] = []
        // With cascade, until nothing new is found: on PostgreSQL a key being made by one of
        // these when the first pass began commits after that pass's snapshot, and the next
        // pass sees it; once revoked here, none of them can make another (refuseUnlessActing).
        for (;;) {
          const { rows } = await (cascade ? cascadeUpdate(id, now) : sql<{ id: number }>`update api_keys set revoked_at = ${now} where id = ${id} and revoked_at is null returning id`).execute(trx)
          revoked.push(...rows.map((row) => Number(row.id)))
          if (!cascade || rows.length === 0) break
        }
        if (revoked.length === 0 && !(await trx.selectFrom('api_keys').select('id').where('id', '=', id).executeTakeFirst())) return undefined
        return revoked.sort((a, b) => a - b)
      })
    },

    async cascadeOf(id) {
      const { rows } = await sql<{ id: number | string; scopes: string }>`with recursive ${made(id)}
        select id, scopes from api_keys where id in (select id from made) and revoked_at is null order by id`.execute(db)
      return rows.map((row) => ({ id: Number(row.id), scopes: row.scopes }))
    },

    async ancestors(id) {
      // Each step: the key's maker and the key that replaced it (by primary key), and the key it replaced (by the replaced_by index).
      const { rows } = await sql<{ id: number | string }>`with recursive up (id) as (
          select cast(${id} as bigint)
          union
          select k.id from api_keys k join up u on k.id = (select c.created_by from api_keys c where c.id = u.id) or k.id = (select c.replaced_by from api_keys c where c.id = u.id) or k.replaced_by = u.id
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

/**
 * The keys a cascading revoke of `id` reaches, as a recursive CTE named `made`: the key,
 * every key it made (a key that rolled itself made its successor: key-admin.ts `roll`),
 * and every key those made; and the keys it replaced (a roll), with what they made: a
 * roll must not hide a leaked key's children from the cascade of its successor. Revoked
 * keys are walked through: what a key made before its own revoke reached every cache is
 * found from it.
 */
const made = (id: number) => sql`made (id) as (
    select cast(${id} as bigint)
    union
    select k.id from api_keys k join made m on k.created_by = m.id or k.replaced_by = m.id
  )`

const cascadeUpdate = (id: number, now: number) =>
  sql<{ id: number }>`with recursive ${made(id)}
    update api_keys set revoked_at = ${now} where id in (select id from made) and revoked_at is null returning id`

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
