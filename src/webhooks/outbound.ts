// Where a webhook may go. A URL given by an API caller is hostile until checked: its
// host is resolved, and every address must be public unicast (no loopback, private,
// link-local, multicast, reserved) unless an operator allowed its range, or its range
// and port (PETSTORE_WEBHOOK_ALLOW_CIDRS). An IPv6 address that embeds an IPv4 one
// (IPv4-mapped and -compatible, SIIT, NAT64, 6to4, Teredo) is judged by the IPv4
// address it leads to. The delivery connects to the address that was checked: the
// check is the socket's own DNS lookup, so a name cannot resolve to a public address
// for the check and a private one for the request.
//
// Names are asked of DNS by c-ares (`dns.Resolver`), with a timeout, off libuv's thread
// pool: a tenant whose DNS server never answers costs its own deliveries a few seconds
// each, and nobody else anything (see `resolvingLookup`).
import { lookup as dnsLookup, Resolver, type LookupAddress } from 'node:dns'
import ipaddr from 'ipaddr.js'
import { isIP, type LookupFunction } from 'node:net'

/** An allowed range (PETSTORE_WEBHOOK_ALLOW_CIDRS' entry): an address and prefix length, and the one port allowed there when given. */
export interface Cidr {
  range: ipaddr.IPv4 | ipaddr.IPv6
  bits: number
  port?: number
}

/** The longest URL stored (the schema's maxLength), counted once normalised: `é` is 6 characters there (`%C3%A9`). */
export const MAX_URL_LENGTH = 2048

export class OutboundRefused extends Error {
  override name = 'OutboundRefused'
}

/**
 * Parses PETSTORE_WEBHOOK_ALLOW_CIDRS' entries: an address or CIDR, with an optional
 * port (`127.0.0.1:4000`, `10.0.0.0/8:8443`, `[::1]:4000`, `[fd00::/8]:443`); a bare
 * address is its own /32 or /128. Throws on one that is none of these.
 */
export function parseCidrs(list: readonly string[]): Cidr[] {
  return list.map(parseCidr)
}

function parseCidr(entry: string): Cidr {
  const text = entry.trim()
  // [IPv6 or IPv6/bits]:port; IPv4, IPv4/bits, IPv4:port, IPv4/bits:port; IPv6, IPv6/bits.
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text)
  const v4 = /^([\d.]+(?:\/\d+)?)(?::(\d+))?$/.exec(text)
  const [range, portText] = bracketed ? [bracketed[1]!, bracketed[2]] : v4 ? [v4[1]!, v4[2]] : [text, undefined]
  const port = portText === undefined ? undefined : Number(portText)
  if (port !== undefined && !(Number.isInteger(port) && port >= 1 && port <= 65_535)) throw new Error(`"${entry}": the port must be 1-65535`)
  const [address, bits] = range.includes('/') ? ipaddr.parseCIDR(range) : [ipaddr.parse(range), ipaddr.parse(range).kind() === 'ipv4' ? 32 : 128]
  return { range: address, bits, ...(port === undefined ? {} : { port }) }
}

/** The port a URL connects to. */
export const portOf = (url: URL) => Number(url.port || (url.protocol === 'https:' ? 443 : 80))

const hex = (part: number) => [part >> 8, part & 255]

/**
 * The IPv4 addresses an IPv6 address leads to, when it is one of the forms that embed
 * one (a packet to it reaches, or is translated to, that IPv4 address): IPv4-mapped
 * (::ffff:0:0/96), SIIT (::ffff:0:0:0/96), IPv4-compatible (::/96, but :: and ::1),
 * NAT64 (64:ff9b::/96), 6to4 (2002::/16, the gateway's) and Teredo (2001::/32, the
 * server's and the client's, the latter's bits inverted). Undefined for any other.
 */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4[] | undefined {
  const p = address.parts
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([...hex(hi), ...hex(lo)])
  const zeros = (from: number, to: number) => p.slice(from, to).every((part) => part === 0)
  if (zeros(0, 5) && p[5] === 0xffff) return [v4(p[6]!, p[7]!)]
  if (zeros(0, 4) && p[4] === 0xffff && p[5] === 0) return [v4(p[6]!, p[7]!)]
  if (zeros(0, 6) && !(p[6] === 0 && p[7]! <= 1)) return [v4(p[6]!, p[7]!)]
  if (p[0] === 0x64 && p[1] === 0xff9b && zeros(2, 6)) return [v4(p[6]!, p[7]!)]
  if (p[0] === 0x2002) return [v4(p[1]!, p[2]!)]
  if (p[0] === 0x2001 && p[1] === 0) return [v4(p[2]!, p[3]!), v4(p[6]! ^ 0xffff, p[7]! ^ 0xffff)]
  return undefined
}

const allows = (allowed: readonly Cidr[], address: ipaddr.IPv4 | ipaddr.IPv6, port: number | undefined) =>
  allowed.some((cidr) => cidr.range.kind() === address.kind() && address.match(cidr.range, cidr.bits) && (cidr.port === undefined || cidr.port === port))

/**
 * Why `address` may not be called (on `port`, when known), or undefined when it may.
 * An allowance with a port allows that port alone; without a known port, only an
 * allowance without one counts.
 */
export function refusal(address: string, allowed: readonly Cidr[], port?: number): string | undefined {
  const parsed = ipaddr.parse(address)
  if (allows(allowed, parsed, port)) return undefined
  if (parsed.kind() === 'ipv6') {
    const embedded = embeddedIPv4(parsed as ipaddr.IPv6)
    if (embedded) {
      for (const inner of embedded) {
        const why = refusal(inner.toString(), allowed, port)
        if (why) return `${address} leads to ${inner.toString()}: ${why}`
      }
      return undefined
    }
  }
  const range = parsed.range()
  if (range === 'unicast') return undefined
  // The same words whether or not another port of it is allowed: a tenant reads them, and
  // would learn from them that the operator opened some port there.
  return `${address} is ${RANGE_NAMES[range] ?? `a special-purpose (${range})`} address`
}

/** ipaddr.js's names of the ranges refused most, as a message says them. */
const RANGE_NAMES: Partial<Record<string, string>> = {
  unspecified: 'an unspecified',
  broadcast: 'a broadcast',
  multicast: 'a multicast',
  linkLocal: 'a link-local',
  loopback: 'a loopback',
  carrierGradeNat: 'a carrier-grade NAT',
  private: 'a private',
  reserved: 'a reserved',
  uniqueLocal: 'a unique local',
  benchmarking: 'a benchmarking',
  ipv4Mapped: 'an IPv4-mapped',
  deprecatedSiteLocal: 'a (deprecated) site-local',
  discard: 'a discard-only',
  rfc6145: 'an RFC 6145 (SIIT)',
  rfc6052: 'an RFC 6052 (NAT64)',
  '6to4': 'a 6to4',
  teredo: 'a Teredo',
  amt: 'an AMT',
  as112: 'an AS112',
  as112v6: 'an AS112',
  deprecatedOrchid: 'a (deprecated) ORCHID',
  orchid2: 'an ORCHIDv2',
  droneRemoteIdProtocolEntityTags: 'a drone remote ID',
  segmentRouting: 'a segment routing',
}

/**
 * Why a URL whose host is an address literal may not be called, or undefined. A
 * literal never goes through the socket's lookup (guardedLookup), so it is checked here.
 */
export function literalRefusal(url: URL, allowed: readonly Cidr[]): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  return isIP(host) === 0 ? undefined : refusal(host, allowed, portOf(url))
}

/** Checks a webhook URL as a caller gave it: the scheme, and every address its host resolves to. */
export async function checkUrl(text: string, { allowHttp, allowed }: { allowHttp: boolean; allowed: readonly Cidr[] }): Promise<URL> {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new OutboundRefused('url is not an absolute URL')
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:')) throw new OutboundRefused(allowHttp ? 'url must be http or https' : 'url must be https')
  if (url.username || url.password) throw new OutboundRefused('url must not carry credentials')
  // (Port 0 parses, and nothing can be sent to it.)
  if (url.port === '0') throw new OutboundRefused('url has port 0: no request can reach it')
  if (url.href.length > MAX_URL_LENGTH) throw new OutboundRefused(`url is ${url.href.length} characters once normalised (non-ASCII characters percent-encoded), more than ${MAX_URL_LENGTH}`)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  // (The operator, not the caller, can allow a range: say where, for a receiver on the server's own machine.)
  const allowable = 'an operator can allow a range with PETSTORE_WEBHOOK_ALLOW_CIDRS'
  if (isIP(host) !== 0) {
    const why = refusal(host, allowed, portOf(url))
    if (why) throw new OutboundRefused(`url's address is not public: ${why} (${allowable})`)
    return url
  }
  // For a name, the same words whether it does not resolve or resolves to an address
  // that is not public, and never that address: the server's resolver may know the
  // operator's internal names, and a tenant could map them from the answers.
  const noneOfItsOwn = `url's host ${NO_PUBLIC_ADDRESS} (${allowable})`
  const addresses = await lookupAll(host, 0, 0).catch((error: NodeJS.ErrnoException) =>
    Promise.reject(new OutboundRefused(NOT_IN_DNS.has(error.code ?? '') ? noneOfItsOwn : `url's host does not resolve: ${error.code ?? error.message}`)),
  )
  if (addresses.some(({ address }) => refusal(address, allowed, portOf(url)) !== undefined)) throw new OutboundRefused(noneOfItsOwn)
  return url
}

/** Every address of a host, as `dns.lookup` with `all` answers it: `family` 0 for either, `hints` getaddrinfo's flags. */
export type LookupAll = (host: string, family: number, hints: number) => Promise<LookupAddress[]>

/**
 * `lookup`, asked at most once at a time for each host (and family): the requests that
 * ask while one runs get its answer. Eight deliveries under way to one endpoint make one
 * lookup, not eight; and where the system's resolver is asked (a thread of libuv's pool
 * each, held until it answers, never cancelled), one host holds one thread at most.
 */
export function oneLookupPerHost(lookup: LookupAll): LookupAll {
  const running = new Map<string, Promise<LookupAddress[]>>()
  return (host, family, hints) => {
    const key = `${family} ${hints} ${host}`
    let answer = running.get(key)
    if (answer === undefined) {
      answer = lookup(host, family, hints).finally(() => running.delete(key))
      running.set(key, answer)
    }
    return answer
  }
}

/** `localhost` and its subdomains (RFC 6761): loopback by definition, never a question for DNS. */
const isLocalhost = (host: string) => host === 'localhost' || host.endsWith('.localhost')

/** How long c-ares waits for a DNS server's answer, a try, and how many tries it makes: a silent server fails a lookup in about 4.5 s. */
export const DNS_TIMEOUT_MS = 1_500
export const DNS_TRIES = 2

/** Said of a name, whether it does not resolve or resolves to an address that is not public: never which (checkUrl says why). */
const NO_PUBLIC_ADDRESS = 'has no public address: it does not resolve, or resolves to an address that is not public'

/** The error codes of a DNS that answered: the name, or the kind of address, is not there. */
const NOT_IN_DNS = new Set(['ENOTFOUND', 'ENODATA'])

/**
 * Every address of a host, asked of DNS by `resolver` (c-ares, which uses no thread and
 * gives up after its timeout), IPv4 first; and of `system` (the thread pool's
 * `getaddrinfo`: `/etc/hosts`, search domains, mDNS) only for a name the DNS answered it
 * does not know, and for `localhost` (RFC 6761). A name whose DNS did not answer in time
 * fails with ETIMEOUT and is not asked again through the system: that is the lookup
 * that held a thread for about 10 s, and a tenant's silent DNS server filled the pool
 * that every other tenant's deliveries and URL checks wait on.
 *
 * Unlike `dns.lookup`, a name DNS knows is not looked up in `/etc/hosts`: an entry there
 * that overrides a public name is not followed.
 */
export function resolvingLookup(resolver: Pick<Resolver, 'resolve4' | 'resolve6'>, system: LookupAll): LookupAll {
  const ask = (query: 'resolve4' | 'resolve6', host: string, family: 4 | 6) =>
    new Promise<LookupAddress[]>((resolve, reject) =>
      resolver[query](host, (error, addresses) => (error ? reject(error) : resolve(addresses.map((address) => ({ address, family }))))),
    )
  return async (host, family, hints) => {
    // An address is its own answer: c-ares takes an IPv4 one, but refuses an IPv6 one (EBADNAME).
    const literal = isIP(host)
    if (literal !== 0) return [{ address: host, family: literal }]
    if (isLocalhost(host)) return system(host, family, hints)
    // RFC 6761: `invalid` names never resolve, and are asked of nobody.
    if (host === 'invalid' || host.endsWith('.invalid')) throw Object.assign(new Error(`${host} is not a name (RFC 6761)`), { code: 'ENOTFOUND' })
    const asked = [...(family === 6 ? [] : [ask('resolve4', host, 4)]), ...(family === 4 ? [] : [ask('resolve6', host, 6)])]
    const answers = await Promise.allSettled(asked)
    const found = answers.flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : []))
    if (found.length > 0) return found
    const errors = answers.flatMap((answer) => (answer.status === 'rejected' ? [answer.reason as NodeJS.ErrnoException] : []))
    const unanswered = errors.find((error) => !NOT_IN_DNS.has(error.code ?? ''))
    if (unanswered) throw Object.assign(new Error(`DNS gave no answer for ${host} (${unanswered.code ?? unanswered.message})`), { code: unanswered.code })
    return system(host, family, hints)
  }
}

/**
 * System lookups (getaddrinfo) under way at once, at most: each holds a thread of
 * libuv's pool until it answers, and a name DNS says it does not know costs a tenant
 * nothing to make up. A burst of them held the pool for the system resolver's 5 s
 * timeout; the rest wait their turn here, and the pool's other threads (64 under `npm
 * start`) stay free for the file system, crypto and `localhost`.
 */
export const SYSTEM_LOOKUPS = 8

/** `lookup`, at most `n` under way at once; the others start in turn as those end. */
export function atMost(n: number, lookup: LookupAll): LookupAll {
  let running = 0
  const waiting: (() => void)[] = []
  return async (host, family, hints) => {
    // A lookup that ends hands its place to the next waiting, so none starts beside them.
    if (running >= n) await new Promise<void>((resolve) => waiting.push(resolve))
    else running++
    try {
      return await lookup(host, family, hints)
    } finally {
      const next = waiting.shift()
      if (next) next()
      else running--
    }
  }
}

const getaddrinfo: LookupAll = (host, family, hints) =>
  new Promise((resolve, reject) => dnsLookup(host, { all: true, family, hints }, (error, addresses) => (error ? reject(error) : resolve(addresses))))
const boundedGetaddrinfo = atMost(SYSTEM_LOOKUPS, getaddrinfo)
/** `localhost` is answered from /etc/hosts at once: it never waits behind made-up names. */
const systemLookup: LookupAll = (host, family, hints) => (isLocalhost(host) ? getaddrinfo : boundedGetaddrinfo)(host, family, hints)

const resolver = new Resolver({ timeout: DNS_TIMEOUT_MS, tries: DNS_TRIES })
const lookupAll = oneLookupPerHost(resolvingLookup(resolver, systemLookup))

/**
 * Asks webhook hosts of these DNS servers (PETSTORE_WEBHOOK_DNS_SERVERS: `address` or
 * `address:port`) rather than those of /etc/resolv.conf: a resolver of the operator's
 * that filters or logs what webhooks look up. For the whole process, as `dns.setServers` is.
 */
export function useDnsServers(servers: readonly string[]): void {
  if (servers.length > 0) resolver.setServers(servers)
}

/** A socket lookup, for connections to `port`, that refuses non-public addresses: the address checked is the address connected to. */
export function guardedLookup(allowed: readonly Cidr[], port?: number): LookupFunction {
  return (hostname, options, callback) => {
    const { family, hints } = options as { family?: unknown; hints?: unknown }
    lookupAll(hostname, Number(family) || 0, Number(hints) || 0).then(
      (list) => {
        // Not the address, nor whether there was one: the tenant reads this in its
        // deliveries, and its name may lead (a CNAME, a rebinding) to names the server's
        // resolver alone knows (checkUrl says why).
        if (list.some((entry) => refusal(entry.address, allowed, port) !== undefined)) return callback(noPublicAddress(hostname), '', 0)
        if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list)
        const first = list[0]!
        callback(null, first.address, first.family)
      },
      (error: NodeJS.ErrnoException) => callback(NOT_IN_DNS.has(error.code ?? '') ? noPublicAddress(hostname) : error, '', 0),
    )
  }
}

const noPublicAddress = (host: string) => Object.assign(new OutboundRefused(`refused: ${host} ${NO_PUBLIC_ADDRESS}`), { code: 'EPETSTOREREFUSED' })
