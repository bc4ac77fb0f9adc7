// Which driver errors mean "retry shortly" (503 with Retry-After) rather than a bug
// (500): the errors PostgreSQL and SQLite raise for contention, by code. The lock and
// statement timeouts are provoked for real in test/postgres-busy.test.ts; deadlocks and
// serialization failures need two transactions the service never runs, so their codes
// are checked here.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { isUnavailable } from '../../src/db/store-errors.js'

const withCode = (code: string) => Object.assign(new Error(`error ${code}`), { code })

describe('isUnavailable', () => {
  it('is true for contention on either store: deadlock, serialization, lock and statement timeouts, SQLITE_BUSY', () => {
    for (const code of ['40P01', '40001', '55P03', '57014', 'SQLITE_BUSY', 'SQLITE_LOCKED', '08006', '57P01']) assert.equal(isUnavailable(withCode(code)), true, code)
  })
  it('is false for errors that are bugs or refusals of the data (08P01: a statement past 65,535 parameters)', () => {
    for (const code of ['23505', '23503', '42P01', '22P02', '08P01', 'SQLITE_CONSTRAINT_UNIQUE']) assert.equal(isUnavailable(withCode(code)), false, code)
    assert.equal(isUnavailable('40P01'), false, 'not an Error')
  })
})
