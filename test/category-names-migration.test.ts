// Migration 2026-11-28-021-category-names-as-read over categories the previous release
// let in: names that read as another (`Dogs `, fullwidth `Ｃａｔｓ`, `Fish` with a
// zero-width space) besides the seeded ones. Each key is folded again; where two now
// fold alike the oldest takes the name and the others stay distinct categories with
// the key they had; a name alone of its kind takes its new key, so that a look-alike of
// it is refused from now on.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import type { DatabaseHandle } from './helpers/database.js'
import type { Store } from '../src/db/store.js'
import { DIALECTS } from './helpers/dialects.js'
import { upgradeFrom, type UpgradedDatabase } from './helpers/previous-release.js'
import { needs } from './helpers/services.js'

/** The last migration of the previous release. */
const PREVIOUS_RELEASE = '2026-11-28-020-keys-disabled-by-operator'
const NOW = Date.UTC(2026, 10, 28, 12)
/** Made through the previous release's API, whose fold was NFC and case alone: each key as it stored it. */
const MADE = [
  { name: 'Dogs ', key: 'dogs ' },
  { name: 'Ｃａｔｓ', key: 'ｃａｔｓ' },
  { name: 'Fish\u200b', key: 'fish\u200b' },
  { name: ' Hamsters', key: ' hamsters' },
  // Ids 12, 13, 14 of a fresh database: 12 takes "gerbils"; 13 had that key and must give
  // it up for one no fold makes; 14 is named as a fallback "<key> #13" would read.
  { name: 'Ｇｅｒｂｉｌｓ', key: 'ｇｅｒｂｉｌｓ' },
  { name: 'Gerbils', key: 'gerbils' },
  { name: 'gerbils #13', key: 'gerbils #13' },
]

for (const { dialect, create } of DIALECTS) {
  describe(`category names folded as read, over the previous release's categories (${dialect})`, async () => {
    if (dialect === 'postgres' && !(await needs('postgres', 'the PostgreSQL category names migration'))) return

    let store: Store
    let handle: DatabaseHandle
    const ids: number[] = []

    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the schema of the previous release, not today's Database type
    async function fillAsThePreviousRelease(db: Kysely<any>): Promise<void> {
      for (const { name, key } of MADE) ids.push(Number((await db.insertInto('categories').values({ name, name_key: key, created_at: NOW }).returning('id').executeTakeFirstOrThrow()).id))
    }

    let upgraded: UpgradedDatabase | undefined
    before(async () => {
      ;({ store, handle } = upgraded = await upgradeFrom(create, PREVIOUS_RELEASE, fillAsThePreviousRelease))
    })
    after(() => upgraded?.close())

    const keyOf = async (id: number) => (await handle.db.selectFrom('categories').select('name_key').where('id', '=', id).executeTakeFirstOrThrow()).name_key

    it('leaves the seeded names theirs, and the look-alikes made after them distinct categories with the keys they had', async () => {
      assert.deepEqual(await Promise.all([1, 2, 6].map(keyOf)), ['dogs', 'cats', 'fish'])
      assert.deepEqual(await Promise.all(ids.slice(0, 3).map(keyOf)), MADE.slice(0, 3).map(({ key }) => key))
      for (const [i, id] of ids.entries()) assert.equal((await store.categories.find(id))?.name, MADE[i]!.name, 'nothing renamed')
    })

    it('gives a name alone of its kind its new key: its look-alikes are refused from now on', async () => {
      assert.equal(await keyOf(ids[3]!), 'hamsters')
      assert.deepEqual(await store.categories.insert({ name: 'HAMSTERS' }, NOW), { outcome: 'name_taken', categoryId: ids[3] })
      assert.deepEqual(await store.categories.insert({ name: 'Dogs\u00a0' }, NOW), { outcome: 'name_taken', categoryId: 1 })
    })

    it('gives a category whose old key another now holds a key no name folds to, whatever names there are', async () => {
      assert.deepEqual(ids.slice(4), [12, 13, 14])
      assert.deepEqual(await Promise.all(ids.slice(4).map(keyOf)), ['gerbils', ' gerbils #13', 'gerbils #13'])
      assert.deepEqual(await store.categories.insert({ name: 'GERBILS' }, NOW), { outcome: 'name_taken', categoryId: 12 })
    })

    it('wrote no event: the names did not change', async () => {
      const events = await handle.db.selectFrom('events').select('type').where('type', '=', 'category.updated').execute()
      assert.deepEqual(events, [])
    })

    it('lets a look-alike be sent with its own name, as a client that PATCHes a whole category does', async () => {
      assert.deepEqual(await store.categories.update(ids[0]!, { name: 'Dogs ', description: 'Kept apart' }), {
        outcome: 'written',
        category: { id: ids[0], name: 'Dogs ', description: 'Kept apart' },
      })
      assert.equal(await keyOf(ids[0]!), 'dogs ')
      assert.deepEqual(await store.categories.update(ids[0]!, { name: 'DOGS' }), { outcome: 'name_taken', categoryId: 1 })
    })
  })
}
