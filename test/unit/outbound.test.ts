// The address guard's judgement of one address: the IPv6 forms that embed an IPv4
// address are judged by that address, and an allowance may name a port. And its DNS
// lookups: one per host at a time, asked of a real DNS server on loopback (one that
// answers, one that never does) through c-ares.
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Resolver, type LookupAddress } from 'node:dns'
import { createSocket, type Socket } from 'node:dgram'
import { once } from 'node:events'
import * as dnsPacket from 'dns-packet'
import { atMost, oneLookupPerHost, parseCidrs, refusal, resolvingLookup, type LookupAll } from '../../src/webhooks/outbound.js'

describe('the outbound address guard', () => {
  it('refuses every IPv6 form that embeds a refused IPv4 address, naming it', () => {
    const forms: [string, string][] = [
      // IPv4-compatible (::/96), as a URL's host comes ([::127.0.0.1] is [::7f00:1]): ipaddr.js calls these unicast.
      ['::7f00:1', '127.0.0.1'],
      ['::a9fe:a9fe', '169.254.169.254'],
      ['::a00:1', '10.0.0.1'],
      ['::ffff:127.0.0.1', '127.0.0.1'], // IPv4-mapped
      ['::ffff:0:a9fe:a9fe', '169.254.169.254'], // SIIT (::ffff:0:0:0/96)
      ['64:ff9b::7f00:1', '127.0.0.1'], // NAT64
      ['64:ff9b::a00:1', '10.0.0.1'],
      ['2002:a9fe:a9fe::1', '169.254.169.254'], // 6to4: the gateway
      ['2001:0:7f00:1::1', '127.0.0.1'], // Teredo: the server
      ['2001:0:4136:e378:8000:63bf:f5ff:fffe', '10.0.0.1'], // Teredo: the client, its bits inverted
    ]
    for (const [address, inner] of forms) {
      const why = refusal(address, [])
      assert.ok(why?.includes(`leads to ${inner}`), `${address}: ${why}`)
    }
  })

  it('lets an embedding form through when the IPv4 address it leads to is public', () => {
    for (const address of ['::5db8:d70e', '64:ff9b::5db8:d70e', '2002:5db8:d70e::1', '::ffff:93.184.215.14']) assert.equal(refusal(address, []), undefined, address)
  })

  it('still refuses the IPv6 addresses of their own ranges, and lets public ones through', () => {
    assert.match(refusal('::1', []) ?? '', /loopback/)
    assert.match(refusal('::', []) ?? '', /unspecified/)
    assert.match(refusal('fd00::1', []) ?? '', /is a unique local address/)
    assert.match(refusal('0.0.0.0', []) ?? '', /is an unspecified address/, 'said as a person would')
    assert.match(refusal('169.254.169.254', []) ?? '', /is a link-local address/)
    assert.equal(refusal('2606:4700:4700::1111', []), undefined)
    // Every range ipaddr.js names, said in words (it wrote "a rfc6052", "a deprecatedOrchid").
    const named: [string, string][] = [['64:ff9b:1::7f00:1', 'an RFC 6052 (NAT64)'], ['2001:10::1', 'a (deprecated) ORCHID'], ['2001:20::1', 'an ORCHIDv2'], ['100::1', 'a discard-only']]
    for (const [address, words] of named) {
      assert.match(refusal(address, []) ?? '', new RegExp(`is ${words.replace(/[()]/g, '\\$&')} address$`), address)
    }
  })

  it('allows a range, an address, or either on one port alone', () => {
    const allowed = parseCidrs(['127.0.0.1:4000', '10.0.0.0/8:8443', '[::1]:4000', '[fd00::/8]:443', '192.168.0.0/16', '::2'])
    assert.equal(refusal('127.0.0.1', allowed, 4000), undefined)
    assert.equal(refusal('127.0.0.1', allowed, 6379), '127.0.0.1 is a loopback address', 'not saying that another port is allowed: a tenant reads it')
    assert.match(refusal('127.0.0.2', allowed, 4000) ?? '', /loopback/, 'an address is its own /32')
    assert.equal(refusal('10.1.2.3', allowed, 8443), undefined)
    assert.ok(refusal('10.1.2.3', allowed, 443))
    assert.ok(refusal('10.1.2.3', allowed), 'a port-bound allowance needs the port')
    assert.equal(refusal('::1', allowed, 4000), undefined)
    assert.ok(refusal('::1', allowed, 4001))
    assert.equal(refusal('fd12::1', allowed, 443), undefined)
    assert.equal(refusal('192.168.1.1', allowed, 1), undefined, 'without a port: every port')
    assert.equal(refusal('::ffff:127.0.0.1', allowed, 4000), undefined, 'the mapped form of an allowed address and port')
    assert.ok(refusal('::7f00:1', allowed, 6379), 'nor its compatible form on another port')
    assert.equal(refusal('::7f00:1', allowed, 4000), undefined, 'its compatible form on the allowed port')
  })

  it('refuses an allowance it cannot read', () => {
    for (const entry of ['127.0.0.1:0', '127.0.0.1:70000', 'localhost', '::1:4000x', '10.0.0.0/33']) assert.throws(() => parseCidrs([entry]), Error, entry)
  })
})

describe('one DNS lookup per host at a time', () => {
  it('answers every request that asks while a lookup of its host runs with that lookup, and looks up again once it ended', async () => {
    const asked: string[] = []
    const pending: Array<{ resolve: (addresses: LookupAddress[]) => void; reject: (error: Error) => void }> = []
    const lookup = oneLookupPerHost((host) => {
      asked.push(host)
      return new Promise((resolve, reject) => pending.push({ resolve, reject }))
    })
    // Eight deliveries to one endpoint whose DNS is silent, and one to another host.
    const silent = Array.from({ length: 8 }, () => lookup('e1.example', 0, 0))
    const other = lookup('e2.example', 0, 0)
    assert.deepEqual(asked, ['e1.example', 'e2.example'], 'one lookup (one of libuv\'s threads) per host, not one per request')
    pending[0]!.reject(Object.assign(new Error('queryA ETIMEOUT'), { code: 'ETIMEOUT' }))
    for (const answer of silent) await assert.rejects(answer, /ETIMEOUT/)
    pending[1]!.resolve([{ address: '93.184.216.34', family: 4 }])
    assert.deepEqual(await other, [{ address: '93.184.216.34', family: 4 }])
    void lookup('e1.example', 0, 0)
    assert.deepEqual(asked, ['e1.example', 'e2.example', 'e1.example'], 'asked again once the first lookup ended')
  })
})

/** A DNS server on loopback (UDP): `answer` says what each question gets; undefined: no answer at all. */
async function dnsServer(answer: (name: string, type: string) => dnsPacket.Answer[] | 'NXDOMAIN' | undefined): Promise<{ address: string; asked: string[]; close: () => void }> {
  const socket: Socket = createSocket('udp4')
  const asked: string[] = []
  socket.on('message', (message, peer) => {
    const query = dnsPacket.decode(message)
    const question = query.questions![0]!
    asked.push(`${question.type} ${question.name}`)
    const found = answer(question.name, question.type)
    if (found === undefined) return
    const reply = dnsPacket.encode({
      id: query.id,
      type: 'response',
      flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE,
      ...(found === 'NXDOMAIN' ? { rcode: 'NXDOMAIN' } : {}),
      questions: query.questions,
      answers: found === 'NXDOMAIN' ? [] : found,
    } as dnsPacket.Packet)
    socket.send(reply, peer.port, peer.address)
  })
  socket.bind(0, '127.0.0.1')
  await once(socket, 'listening')
  return { address: `127.0.0.1:${socket.address().port}`, asked, close: () => socket.close() }
}

describe('system lookups, at most so many at once', () => {
  it('starts the others in turn as those under way end, never more than the bound, and answers each', async () => {
    let running = 0
    let most = 0
    const ends: (() => void)[] = []
    const lookup = atMost(8, async (host) => {
      running++
      most = Math.max(most, running)
      await new Promise<void>((resolve) => ends.push(resolve))
      running--
      return [{ address: `10.0.0.${host.slice(1)}`, family: 4 }]
    })
    // A tenant's 20 made-up names, each a getaddrinfo holding a thread until the system resolver answers.
    const answers = Array.from({ length: 20 }, (_, i) => lookup(`h${i}`, 0, 0))
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(running, 8, 'eight under way, twelve waiting')
    while (ends.length > 0) {
      ends.shift()!()
      // Another caller arriving as one ends waits its turn too.
      await new Promise((resolve) => setImmediate(resolve))
    }
    assert.deepEqual((await Promise.all(answers)).map((list) => list[0]!.address), Array.from({ length: 20 }, (_, i) => `10.0.0.${i}`))
    assert.equal(most, 8)
  })
})

describe('resolving a webhook host', () => {
  let answering: Awaited<ReturnType<typeof dnsServer>>
  let silent: Awaited<ReturnType<typeof dnsServer>>
  before(async () => {
    answering = await dnsServer((name, type) => {
      if (name === 'hooks.example') return type === 'A' ? [{ type: 'A', name, ttl: 60, data: '93.184.216.34' }] : [{ type: 'AAAA', name, ttl: 60, data: '2606:2800:220:1::1' }]
      if (name === 'v4only.example') return type === 'A' ? [{ type: 'A', name, ttl: 60, data: '93.184.216.35' }] : []
      return 'NXDOMAIN'
    })
    silent = await dnsServer(() => undefined)
  })
  after(() => {
    answering.close()
    silent.close()
  })

  /** The lookup under test against `server`, and the names the system's resolver (the thread pool's getaddrinfo) was asked. */
  function lookupVia(server: { address: string }, timeout = 200) {
    const resolver = new Resolver({ timeout, tries: 1 })
    resolver.setServers([server.address])
    const system: string[] = []
    const systemLookup: LookupAll = async (host) => {
      system.push(host)
      return [{ address: '10.1.2.3', family: 4 }]
    }
    return { lookup: resolvingLookup(resolver, systemLookup), system }
  }

  it('takes the addresses DNS answers, IPv4 first, without asking the system', async () => {
    const { lookup, system } = lookupVia(answering)
    assert.deepEqual(await lookup('hooks.example', 0, 0), [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ])
    assert.deepEqual(await lookup('hooks.example', 6, 0), [{ address: '2606:2800:220:1::1', family: 6 }], 'one family when asked for one')
    assert.deepEqual(await lookup('v4only.example', 0, 0), [{ address: '93.184.216.35', family: 4 }], 'a name with no IPv6 address')
    assert.deepEqual(system, [])
  })

  it('answers an address with itself, asking nobody: IPv6 ones too, which c-ares refuses (EBADNAME)', async () => {
    const { lookup, system } = lookupVia(silent, 100)
    assert.deepEqual(await lookup('::1', 0, 0), [{ address: '::1', family: 6 }])
    assert.deepEqual(await lookup('2606:2800:220:1::1', 0, 0), [{ address: '2606:2800:220:1::1', family: 6 }])
    assert.deepEqual(await lookup('93.184.216.34', 0, 0), [{ address: '93.184.216.34', family: 4 }])
    assert.deepEqual([system, silent.asked], [[], []])
  })

  it('fails an .invalid name at once, asking nobody (RFC 6761)', async () => {
    const { lookup, system } = lookupVia(silent, 100)
    await assert.rejects(lookup('hooks.invalid', 0, 0), { code: 'ENOTFOUND' })
    assert.deepEqual([system, silent.asked], [[], []])
  })

  it('asks the system (/etc/hosts, search domains) for a name DNS says it does not know, and for localhost', async () => {
    const { lookup, system } = lookupVia(answering)
    assert.deepEqual(await lookup('receiver', 0, 0), [{ address: '10.1.2.3', family: 4 }])
    await lookup('localhost', 0, 0)
    await lookup('api.localhost', 0, 0)
    assert.deepEqual(system, ['receiver', 'localhost', 'api.localhost'])
    assert.ok(!answering.asked.some((question) => question.endsWith('localhost')), 'localhost is never asked of DNS')
  })

  it('fails a name whose DNS never answers after its timeout, and never asks the system for it: no thread of the pool waits on a silent server', async () => {
    const { lookup, system } = lookupVia(silent, 100)
    // A tenant's 16 endpoints, each at a host of its own, all on a silent DNS server.
    const started = Date.now()
    const results = await Promise.allSettled(Array.from({ length: 16 }, (_, i) => lookup(`e${i}.silent.example`, 0, 0)))
    for (const result of results) {
      assert.equal(result.status, 'rejected')
      const error = (result as PromiseRejectedResult).reason as NodeJS.ErrnoException
      assert.equal(error.code, 'ETIMEOUT')
      assert.match(error.message, /^DNS gave no answer for e\d+\.silent\.example \(ETIMEOUT\)$/)
    }
    assert.deepEqual(system, [], 'not one getaddrinfo: each would hold a thread of the pool for about 10 s')
    assert.ok(silent.asked.length >= 32, 'both families of every name were asked of DNS')
    assert.ok(Date.now() - started < 5_000, 'given up after the resolver\'s timeout')
  })
})
