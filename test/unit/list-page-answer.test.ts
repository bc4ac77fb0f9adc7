// The answers GET /v1/pets keeps for the pages a store shares (PetsPage.shared).
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createListPageAnswers } from '../../src/routes/v1/list-page-answer.js'
import { encodePetsCursor, parsePetsListFilters } from '../../src/routes/v1/pets-list-query.js'
import type { PetsPage } from '../../src/db/pets-store.js'
import type { Pet } from '../../src/schemas/pet.js'

const pet = (id: number): Pet => ({ id, name: `pet ${id}`, categoryId: 1, status: 'sold' })
const fresh = (pets: Pet[]): PetsPage => ({ pets, shared: false })
const shared = (pets: Pet[]): PetsPage => Object.freeze({ pets: Object.freeze(pets), shared: true })
const all = parsePetsListFilters({ limit: 2 })
const sold = parsePetsListFilters({ limit: 2, status: 'sold' })
const cursorAfter = (filters: typeof all, id: number) => encodePetsCursor(filters, pet(id))
const countingSerializer = () => {
  const calls: (readonly Pet[])[] = []
  return { calls, serialize: (pets: readonly Pet[]) => (calls.push(pets), JSON.stringify(pets)) }
}

describe('list page answers', () => {
  it('drops the look-ahead pet and links the next page after the last pet sent', () => {
    const { serialize } = countingSerializer()
    const answer = createListPageAnswers().answer(fresh([pet(1), pet(2), pet(3)]), { filters: sold, limit: 2 }, serialize)
    assert.deepEqual(answer.pets, [pet(1), pet(2)])
    assert.equal(answer.link, `</v1/pets?limit=2&status=sold&cursor=${cursorAfter(sold, 2)}>; rel="next"`)
  })

  it('sends a page that fits whole, without a link', () => {
    const { serialize } = countingSerializer()
    const answer = createListPageAnswers().answer(fresh([pet(1)]), { filters: all, limit: 2 }, serialize)
    assert.deepEqual(answer.pets, [pet(1)])
    assert.equal(answer.link, undefined)
  })

  it('serializes a shared page once and answers its JSON while the page lives', () => {
    const { calls, serialize } = countingSerializer()
    const answers = createListPageAnswers()
    const page = shared([pet(1), pet(2), pet(3)])
    const first = answers.answer(page, { filters: all, limit: 2 }, serialize)
    const again = answers.answer(page, { filters: all, limit: 2 }, serialize)
    assert.equal(first.json, JSON.stringify([pet(1), pet(2)]))
    assert.equal(first.link, `</v1/pets?limit=2&cursor=${cursorAfter(all, 2)}>; rel="next"`)
    assert.equal(again, first)
    assert.equal(calls.length, 1)
  })

  it('works out a new shared page afresh, and never keeps the answer of a page that is not shared', () => {
    const { calls, serialize } = countingSerializer()
    const answers = createListPageAnswers()
    answers.answer(shared([pet(1)]), { filters: all, limit: 2 }, serialize)
    assert.deepEqual(answers.answer(shared([pet(1), pet(4)]), { filters: all, limit: 2 }, serialize).json, JSON.stringify([pet(1), pet(4)]))
    const mutable = fresh([pet(5)])
    assert.equal(answers.answer(mutable, { filters: all, limit: 2 }, serialize).pets, mutable.pets)
    answers.answer(mutable, { filters: all, limit: 2 }, serialize)
    assert.equal(calls.length, 2)
  })

  it('does not answer one request with the answer kept for another limit or status', () => {
    const { serialize } = countingSerializer()
    const answers = createListPageAnswers()
    const page = shared([pet(1), pet(2), pet(3)])
    answers.answer(page, { filters: all, limit: 2 }, serialize)
    const other = answers.answer(page, { filters: sold, limit: 1 }, serialize)
    assert.equal(other.json, JSON.stringify([pet(1)]))
    assert.equal(other.link, `</v1/pets?limit=1&status=sold&cursor=${cursorAfter(sold, 1)}>; rel="next"`)
  })
})
