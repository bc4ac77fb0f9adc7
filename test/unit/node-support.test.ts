import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { satisfies, supportedNodeRange, unsupportedNodeMessage } from '../../src/node-support.js'
import { satisfies as scriptSatisfies } from '../../scripts/provision-node.mjs'

const versions = JSON.parse(readFileSync(new URL('../../scripts/node-versions.json', import.meta.url), 'utf8')) as { default: string; lines: string[] }
const range = supportedNodeRange()

// [version, supported]: the LTS lines from 22.13 (eslint's floor) on, never the odd lines or Node 20.
const CASES: [string, boolean][] = [
  ['18.20.8', false],
  ['20.20.2', false],
  ['22.12.0', false],
  ['22.13.0', true],
  ['22.23.3', true],
  ['23.11.1', false],
  ['24.0.0', true],
  ['24.21.0', true],
  ['25.9.0', false],
  ['26.10.0', true],
]

describe('supported Node.js versions', () => {
  it('are package.json engines: 22.13 or later, 24 and 26', () => {
    for (const [version, supported] of CASES) assert.equal(satisfies(version, range), supported, version)
  })

  it('are judged the same way by the provisioning script, which runs before dist/ is built', () => {
    for (const [version] of CASES) assert.equal(scriptSatisfies(version, range), satisfies(version, range), version)
  })

  it('include every line CI runs and the default that npm scripts fall back to', () => {
    for (const version of versions.lines) assert.ok(satisfies(version, range), version)
    assert.ok(versions.lines.includes(versions.default))
    assert.deepEqual(versions.lines.map((v) => v.split('.')[0]), ['22', '24', '26'])
  })

  it('tell the user on an unsupported Node which versions to use, and nothing on a supported one', () => {
    assert.equal(unsupportedNodeMessage(process.versions.node), undefined)
    const message = unsupportedNodeMessage('20.20.2')
    assert.match(message ?? '', /Node\.js v20\.20\.2 is not supported/)
    assert.ok(message?.includes(range))
  })

  it('refuses a range it does not understand rather than guessing', () => {
    assert.throws(() => satisfies('24.0.0', '~24.0.0'), /not understood/)
  })
})
