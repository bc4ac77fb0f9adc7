// GET /v1/pets's filters and sort on every store: categoryId and status (one or a comma
// list), q (a case-insensitive substring of the name), ids (up to 100, with each pet's
// ETag), sort (id, -id, name); every combination pages to the same pets as one big
// page, and a cursor used with other filters or another sort is a 400.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import type { ErrorBody } from '../src/errors.js'
import type { Category } from '../src/schemas/category.js'
import type { Pet, PetStatus } from '../src/schemas/pet.js'
import { encodeCursor } from '../src/routes/v1/cursor.js'
import { UNLIMITED } from './helpers/keys.js'
import { STORES, startTestServer, type TestServer } from './helpers/server.js'

const NAMES = ['Luna', 'LUNATIC', 'una lun', 'Émile', 'éMILE', '100% cat', '1000 cats', 'a_b', 'axb', 'Zed', 'Bo', 'luna', 'Alunaa', 'R\u00e9my', 'Re\u0301my', '\ufeffbom', '\u{1f436}']

for (const store of STORES) describe(`listing pets with filters (${store})`, () => {
  let server: TestServer
  let key: string
  let cats: Category
  let dogs: Category
  /** Every pet the suite made, in id order. */
  const pets: Pet[] = []
  before(async () => {
    server = await startTestServer({ store })
    key = await server.createKey('enterprise', UNLIMITED)
    const category = async (name: string) => (await server.request<Category>('/v1/categories', { method: 'POST', key, json: { name } })).body
    cats = await category('Filter cats')
    dogs = await category('Filter dogs')
    const statuses: PetStatus[] = ['available', 'pending', 'sold']
    for (const [i, name] of NAMES.entries()) {
      const json = { name, categoryId: i % 2 === 0 ? cats.id : dogs.id, status: statuses[i % 3] }
      pets.push((await server.request<Pet>('/v1/pets', { method: 'POST', key, json })).body)
    }
  })
  after(() => server.close())

  const mine = (pet: Pet) => pet.categoryId === cats.id || pet.categoryId === dogs.id
  /** Every page of `path` (limit 2), following the links; the pets of this suite only. */
  async function every(path: string, limit = 2): Promise<Pet[]> {
    const seen: Pet[] = []
    let next: string | undefined = `${path}${path.includes('?') ? '&' : '?'}limit=${limit}`
    for (let pages = 0; next !== undefined; pages++) {
      assert.ok(pages < 200, 'the pages end')
      const res: { status: number; body: Pet[]; headers: Headers } = await server.request<Pet[]>(next, { key })
      assert.equal(res.status, 200, `${next}: ${JSON.stringify(res.body)}`)
      assert.ok(res.body.length <= limit)
      seen.push(...res.body)
      next = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1]
    }
    return seen.filter(mine)
  }
  const byId = (a: Pet, b: Pet) => a.id - b.id
  // By code point, as the API sorts (UTF-8's byte order is code point order; JS's < compares UTF-16 units, and puts 🐶 before U+FEFF).
  const byName = (a: Pet, b: Pet) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)) || a.id - b.id
  const where = (test: (pet: Pet) => boolean, order = byId) => pets.filter(test).sort(order)

  it("lets an account have 2 searches under way on an instance, and answers a third 429 at once, while another account's are served", async () => {
    const other = await server.createKey('enterprise', UNLIMITED)
    // Searches held in the store until released, as long ones are.
    const list = server.store.pets.list
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    server.store.pets.list = async (query) => (query.q === 'held' ? (await held, list.call(server.store.pets, query)) : list.call(server.store.pets, query))
    try {
      const search = (with_: string, sort = '') => server.request<{ code: string; message: string }>(`/v1/pets?q=held${sort}`, { key: with_ })
      const underWay = [search(key), search(key, '&sort=-id')]
      await new Promise((resolve) => setTimeout(resolve, 100))
      const third = await search(key)
      assert.equal(third.status, 429, third.text)
      assert.equal(third.body.code, 'rate_limited')
      assert.equal(third.headers.get('retry-after'), '1')
      assert.match(third.body.message, /has 2 searches .* under way on this instance/)
      const othersSearch = search(other)
      assert.equal((await server.request(`/v1/pets?q=lun`, { key: other })).status, 200, "another account's second one: its own places")
      release()
      assert.deepEqual((await Promise.all([...underWay, othersSearch])).map((res) => res.status), [200, 200, 200])
      assert.equal((await search(key)).status, 200, 'its places back once they end')
    } finally {
      release()
      server.store.pets.list = list
    }
  })

  it('filters by one category, or any of a comma list', async () => {
    assert.deepEqual(await every(`/v1/pets?categoryId=${cats.id}`), where((p) => p.categoryId === cats.id))
    assert.deepEqual(await every(`/v1/pets?categoryId=${dogs.id},${cats.id}`), where(mine))
    assert.deepEqual(await every('/v1/pets?categoryId=987654'), [])
  })

  it('filters by one status, or any of a comma list', async () => {
    assert.deepEqual(await every('/v1/pets?status=sold'), where((p) => p.status === 'sold'))
    assert.deepEqual(await every('/v1/pets?status=sold,available'), where((p) => p.status !== 'pending'))
  })

  it('finds names containing q, case-insensitively, as a substring (not merely its trigrams), % and _ literally', async () => {
    const named = async (q: string) => (await every(`/v1/pets?q=${encodeURIComponent(q)}`)).map((p) => p.name)
    assert.deepEqual(await named('luna'), ['Luna', 'LUNATIC', 'luna', 'Alunaa'])
    assert.deepEqual(await named('UNA'), ['Luna', 'LUNATIC', 'una lun', 'luna', 'Alunaa'])
    assert.deepEqual(await named('émi'), ['Émile', 'éMILE'])
    // é composed (NFC) or as e and a combining accent (NFD): one letter as people read it, found either way.
    assert.deepEqual(await named('R\u00e9m'), ['R\u00e9my', 'Re\u0301my'])
    assert.deepEqual(await named('Re\u0301m'), ['R\u00e9my', 'Re\u0301my'])
    assert.deepEqual(await named('\u00e9my'), ['R\u00e9my', 'Re\u0301my'])
    // Three code points, two letters: under the 3 characters q needs, whichever way it was typed.
    for (const short of ['e\u0301m', '\u00e9m']) {
      const res = await server.request<{ code: string; message: string }>(`/v1/pets?q=${encodeURIComponent(short)}`, { key })
      assert.deepEqual([res.status, res.body.code], [400, 'invalid_parameter'], short)
    }
    assert.deepEqual(await named('0% c'), ['100% cat'])
    assert.deepEqual(await named('a_b'), ['a_b'])
    assert.deepEqual(await named('zzz'), [])
  })

  it('sees a renamed or deleted pet in the search at once', async () => {
    const pet = (await server.request<Pet>('/v1/pets', { method: 'POST', key, json: { name: 'Quokka', categoryId: cats.id } })).body
    assert.deepEqual((await every('/v1/pets?q=okk')).map((p) => p.id), [pet.id])
    await server.request(`/v1/pets/${pet.id}`, { method: 'PATCH', key, json: { name: 'Wombat' } })
    assert.deepEqual(await every('/v1/pets?q=okk'), [])
    assert.deepEqual((await every('/v1/pets?q=omba')).map((p) => p.id), [pet.id])
    await server.request(`/v1/pets/${pet.id}`, { method: 'DELETE', key })
    assert.deepEqual(await every('/v1/pets?q=omba'), [])
  })

  it('fetches the pets of ids, each with its ETag in Pet-ETags', async () => {
    const wanted = [pets[3]!, pets[0]!, pets[7]!]
    const res = await server.request<Pet[]>(`/v1/pets?ids=${wanted.map((p) => p.id).join(',')},987654321`, { key })
    assert.deepEqual(res.body, [...wanted].sort(byId))
    const patched = await server.request<Pet>(`/v1/pets/${pets[0]!.id}`, { method: 'PATCH', key, json: { name: pets[0]!.name } })
    const etags = Object.fromEntries((res.headers.get('pet-etags') ?? '').split(', ').map((pair) => pair.split('=')))
    assert.equal(etags[String(pets[0]!.id)], patched.headers.get('etag'), 'the ETag the pet has')
    assert.deepEqual(Object.keys(etags).map(Number), res.body.map((p) => p.id))
    assert.equal((await server.request('/v1/pets?limit=1', { key })).headers.get('pet-etags'), null, 'only with ids')
  })

  it('sorts by -id and by name, and every combination of filters and sort pages to the same pets as one large page', async () => {
    assert.deepEqual(await every(`/v1/pets?categoryId=${cats.id},${dogs.id}&sort=-id`), where(mine, (a, b) => b.id - a.id))
    assert.deepEqual(await every(`/v1/pets?categoryId=${cats.id},${dogs.id}&sort=name`), where(mine, byName))
    // A page of one: each pet is the cursor of the next page, the one whose name starts with U+FEFF too.
    assert.deepEqual(await every(`/v1/pets?categoryId=${cats.id},${dogs.id}&sort=name`, 1), where(mine, byName))
    const combos: [string, (p: Pet) => boolean][] = [
      [`categoryId=${cats.id}&status=available,sold`, (p) => p.categoryId === cats.id && p.status !== 'pending'],
      [`categoryId=${dogs.id}&q=una`, (p) => p.categoryId === dogs.id && p.name.toLowerCase().includes('una')],
      ['q=una&status=available,pending', (p) => p.name.toLowerCase().includes('una') && p.status !== 'sold'],
      [`ids=${pets.map((p) => p.id).join(',')}&status=pending`, (p) => p.status === 'pending'],
      [`ids=${pets.map((p) => p.id).join(',')}&q=mile&categoryId=${cats.id},${dogs.id}`, (p) => p.name.toLowerCase().includes('mile')],
    ]
    for (const [filters, test] of combos) {
      for (const [sort, order] of [['id', byId], ['-id', (a: Pet, b: Pet) => b.id - a.id], ['name', byName]] as const) {
        assert.deepEqual(await every(`/v1/pets?${filters}&sort=${sort}`), where((p) => mine(p) && test(p), order), `${filters}&sort=${sort}`)
      }
    }
  })

  it('refuses a cursor used with other filters or another sort, and keeps the cursors of plain lists from before filters', async () => {
    const first = await server.request<Pet[]>(`/v1/pets?categoryId=${cats.id}&limit=1`, { key })
    const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.get('link') ?? '')?.[1]
    assert.ok(next)
    const cursor = new URLSearchParams(next.split('?')[1]).get('cursor')!
    for (const other of [`categoryId=${dogs.id}`, `categoryId=${cats.id}&status=sold`, `categoryId=${cats.id}&sort=-id`, `categoryId=${cats.id}&sort=name`, '']) {
      const res = await server.request<ErrorBody>(`/v1/pets?${other}&cursor=${cursor}`, { key })
      assert.deepEqual([res.status, res.body.code], [400, 'invalid_parameter'], other)
      assert.match(res.body.message, /cursor/)
    }
    assert.equal((await server.request(`/v1/pets?categoryId=${cats.id}&cursor=${cursor}&limit=5`, { key })).status, 200, 'the same filters in another order of parameters, another limit')
    const legacy = await server.request<Pet[]>(`/v1/pets?limit=1&cursor=${encodeCursor(pets[0]!.id)}`, { key })
    assert.equal(legacy.body[0]?.id, pets[1]!.id)
    assert.equal((await server.request(`/v1/pets?categoryId=${cats.id}&cursor=${encodeCursor(pets[0]!.id)}`, { key })).status, 400, 'an old cursor knows no filters')
  })

  it('refuses malformed filters with 400 invalid_parameter naming the parameter', async () => {
    for (const [query, parameter] of [
      ['status=lost', 'status'],
      ['status=available,', 'status'],
      ['categoryId=0', 'categoryId'],
      ['categoryId=1,x', 'categoryId'],
      ['categoryId=9007199254740992', 'categoryId'],
      ['ids=1,,2', 'ids'],
      [`ids=${Array.from({ length: 101 }, (_, i) => i + 1).join(',')}`, 'ids'],
      ['q=ab', 'q'],
      [`q=${'x'.repeat(101)}`, 'q'],
      ['sort=age', 'sort'],
    ]) {
      const res = await server.request<ErrorBody>(`/v1/pets?${query}`, { key })
      assert.deepEqual([res.status, res.body.code, res.body.details?.[0]?.field], [400, 'invalid_parameter', parameter], query)
    }
    assert.equal((await server.request(`/v1/pets?ids=${Array.from({ length: 100 }, (_, i) => i + 1).join(',')}`, { key })).status, 200, '100 ids')
    // 100 letters is the most, however they were typed: 60 é as e and a combining accent are 60.
    assert.equal((await server.request(`/v1/pets?q=${encodeURIComponent('e\u0301'.repeat(60))}`, { key })).status, 200, '60 letters typed decomposed')
    for (const q of ['e\u0301'.repeat(101), 'x'.repeat(401)]) {
      const res = await server.request<ErrorBody>(`/v1/pets?q=${encodeURIComponent(q)}`, { key })
      assert.deepEqual([res.status, res.body.message], [400, 'parameter "q" must be at most 100 characters long, an accented letter counted once'], `${q.length} code points`)
    }
  })

  it('refuses a made-up sort=name cursor whose name no store could hold, alike on every store', async () => {
    // The cursor is not signed: its form is public (p2:<binding>:<id>:<name>), so anyone can write one.
    const binding = createHash('sha256').update('sort=name').digest('base64url').slice(0, 11)
    const made = (name: Buffer) => Buffer.from(`p2:${binding}:5:${name.toString('base64url')}`).toString('base64url')
    assert.equal((await server.request(`/v1/pets?sort=name&cursor=${made(Buffer.from('Luna'))}`, { key })).status, 200, 'a well-formed one')
    for (const name of [Buffer.from('\0'), Buffer.from('Lu\0na'), Buffer.from([0xff, 0xfe]), Buffer.from([0xed, 0xa0, 0x80])]) {
      const res = await server.request<ErrorBody>(`/v1/pets?sort=name&cursor=${made(name)}`, { key })
      assert.deepEqual([res.status, res.body.code, res.body.details?.[0]?.field], [400, 'invalid_parameter', 'cursor'], name.toString('hex'))
    }
  })
})
