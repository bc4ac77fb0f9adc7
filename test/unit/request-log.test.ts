// What the request log writes of a URL: as sent, but never a secret a client put in it.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { loggableUrl } from '../../src/plugins/request-log.js'

describe('loggableUrl', () => {
  it('keeps a URL without secrets as it was sent, percent-encoding and all', () => {
    for (const url of ['/v1/pets', '/v1/pets?limit=20&status=sold', '/v1/pets?q=%zz&sort=name', '/healthz?', '/v1/pets?flag']) assert.equal(loggableUrl(url), url)
  })

  it('masks the value of a parameter named like a secret, and a key wherever it is', () => {
    assert.equal(loggableUrl('/v1/pets?api_key=ps_test_abc123&token=s3cret&limit=2'), '/v1/pets?api_key=***&token=***&limit=2')
    assert.equal(loggableUrl('/v1/pets?PASSWORD=x&Client_Secret=y'), '/v1/pets?PASSWORD=***&Client_Secret=***')
    assert.equal(loggableUrl('/v1/pets/ps_live_XYZ9?q=ps_test_Abc'), '/v1/pets/ps_live_***?q=ps_test_***')
  })

  it('cuts a URL past 2,048 characters, and reads a long one in one pass', () => {
    // A parameter name of 16 KB with "key" all along it and no "=": a regular expression
    // that backtracks took 170-200 ms of the event loop for it.
    const long = `/v1/pets?${'key'.repeat(5_000)}`
    const logged = loggableUrl(long)
    assert.equal(logged.length, 2_049)
    assert.ok(logged.endsWith('…'))
  })
})
