// Migration 2026-11-25-010-categories over data the previous release wrote: a
// database migrated up to 009 and filled through the old schema (pets naming bare
// category numbers, keys with the old presets' scopes), then the rest of the
// migrations as the store applies them when it opens. Every category number in use
// becomes a category "Category N" numbered N, and no other (no common ones beside
// them); every pet stays valid; the presets' keys get the new scopes.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import type { DatabaseHandle } from './helpers/database.js'
import type { Store } from '../src/db/store.js'
import { storedScopes } from '../src/vocabulary/scopes.js'
import { DIALECTS } from './helpers/dialects.js'
import { upgradeFrom, type UpgradedDatabase } from './helpers/previous-release.js'
import { needs } from './helpers/services.js'
import { insertPet } from './helpers/pets.js'

/** The last migration of the previous release. */
const PREVIOUS_RELEASE = '2026-11-25-009-accounts'
const NOW = Date.UTC(2026, 10, 25, 12)
const OLD_ALL = 'pets:read pets:write orders:read orders:write usage:read events:read webhooks:read webhooks:write'
const OLD_READ_ONLY = 'pets:read orders:read usage:read events:read webhooks:read'
/** Category numbers the previous release's clients used. */
const USED = [3, 42, 987_654]

for (const { dialect, create } of DIALECTS) {
  describe(`categories migration of the previous release's data (${dialect})`, async () => {
    if (dialect === 'postgres' && !(await needs('postgres', 'the PostgreSQL categories migration'))) return

    let store: Store
    let handle: DatabaseHandle
    const pets: number[] = []
    const keys: Record<'all' | 'readOnly' | 'allAndKeys' | 'narrow', number> = { all: 0, readOnly: 0, allAndKeys: 0, narrow: 0 }

    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the schema of the previous release (no categories table), not today's Database type
    async function fillAsThePreviousRelease(db: Kysely<any>): Promise<void> {
      for (const [i, categoryId] of [...USED, 3, 42].entries()) {
        const row = await db.insertInto('pets').values({ name: `old ${i}`, category_id: categoryId, status: 'available', created_at: NOW }).returning('id').executeTakeFirstOrThrow()
        pets.push(Number(row.id))
      }
      const account = await db.insertInto('accounts').values({ name: 'old', plan: 'free', created_at: NOW }).returning('id').executeTakeFirstOrThrow()
      const key = async (name: string, scopes: string) =>
        Number(
          (await db.insertInto('api_keys').values({ account_id: account.id, name, prefix: `ps_test_${name}`, key_hash: `hash of ${name}`, scopes, created_at: NOW }).returning('id').executeTakeFirstOrThrow())
            .id,
        )
      keys.all = await key('all', OLD_ALL)
      keys.readOnly = await key('ro', OLD_READ_ONLY)
      keys.allAndKeys = await key('allk', `${OLD_ALL} keys:read keys:write`)
      keys.narrow = await key('narrow', 'pets:read')
    }

    let upgraded: UpgradedDatabase | undefined
    before(async () => {
      // The store applies 010 and anything after it.
      ;({ store, handle } = upgraded = await upgradeFrom(create, PREVIOUS_RELEASE, fillAsThePreviousRelease))
    })
    after(() => upgraded?.close())

    it('makes a category "Category N" for every number in use, and no other', async () => {
      const all = await store.categories.list({ afterId: 0, limit: 100 })
      assert.deepEqual(all, USED.map((id) => ({ id, name: `Category ${id}`, description: '' })))
    })

    it('keeps every pet as it was, each naming an existing category', async () => {
      for (const [i, id] of pets.entries()) {
        const pet = await store.pets.find(id)
        assert.deepEqual(pet, { id, name: `old ${i}`, categoryId: [...USED, 3, 42][i], status: 'available' })
        assert.ok(await store.categories.find(pet!.categoryId))
      }
      // …and a change of another field passes the new check.
      assert.equal((await store.pets.update(pets[0]!, { name: 'renamed' })).outcome, 'updated')
    })

    it('wrote no event for the categories it made', async () => {
      const events = await handle.db.selectFrom('events').select('type').where('type', 'like', 'category.%').execute()
      assert.deepEqual(events, [])
    })

    it('numbers a category made after the migration above every one there was, and refuses their names in another case', async () => {
      assert.deepEqual(await store.categories.insert({ name: 'CATEGORY 42' }, NOW), { outcome: 'name_taken', categoryId: 42 })
      const made = await store.categories.insert({ name: 'Cats' }, NOW)
      assert.equal(made.outcome, 'written')
      const id = made.outcome === 'written' ? made.category.id : 0
      assert.ok(id > 987_654, `category ${id} is above the largest number in use`)
      // A new pet may name a migrated category, which then cannot go.
      await insertPet(store.pets, { name: 'new', categoryId: 42 }, NOW)
      assert.deepEqual(await store.categories.remove(42), { outcome: 'category_in_use' })
    })

    it('gives the keys holding a whole preset the preset\'s new scopes, and no other key any', async () => {
      const scopesOf = async (id: number) => storedScopes((await handle.db.selectFrom('api_keys').select('scopes').where('id', '=', id).executeTakeFirstOrThrow()).scopes)
      assert.deepEqual(await scopesOf(keys.all), storedScopes(`${OLD_ALL} categories:read categories:write`))
      assert.deepEqual(await scopesOf(keys.allAndKeys), storedScopes(`${OLD_ALL} keys:read keys:write categories:read categories:write`))
      assert.deepEqual(await scopesOf(keys.readOnly), storedScopes(`${OLD_READ_ONLY} categories:read`))
      assert.deepEqual(await scopesOf(keys.narrow), ['pets:read'])
    })
  })
}
