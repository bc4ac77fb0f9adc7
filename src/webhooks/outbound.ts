// Where a webhook may go. A URL given by an API caller is hostile until checked: its
// host is resolved, and every address must be public unicast (no loopback, private,
// link-local, multicast, reserved, nor an IPv4-mapped IPv6 form of them) unless an
// operator allowed its range (PETSTORE_WEBHOOK_ALLOW_CIDRS). The delivery connects to
// the address that was checked: the check is the socket's own DNS lookup, so a name
// cannot resolve to a public address for the check and a private one for the request.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import ipaddr from 'ipaddr.js'
import { isIP, type LookupFunction } from 'node:net'

export type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number]

export class OutboundRefused extends Error {
  override name = 'OutboundRefused'
}

/** Parses PETSTORE_WEBHOOK_ALLOW_CIDRS' entries; throws on one that is not a CIDR. */
export function parseCidrs(list: readonly string[]): Cidr[] {
  return list.map((cidr) => ipaddr.parseCIDR(cidr))
}

/** Why `address` may not be called, or undefined when it may. */
export function refusal(address: string, allowed: readonly Cidr[]): string | undefined {
  let parsed = ipaddr.parse(address)
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address()
  if (allowed.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits))) return undefined
  const range = parsed.range()
  return range === 'unicast' ? undefined : `${address} is a ${range} address`
}

/**
 * Why a URL whose host is an address literal may not be called, or undefined. A
 * literal never goes through the socket's lookup (guardedLookup), so it is checked here.
 */
export function literalRefusal(url: URL, allowed: readonly Cidr[]): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  return isIP(host) === 0 ? undefined : refusal(host, allowed)
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
  const addresses = await resolveAll(url.hostname.replace(/^\[|\]$/g, ''))
  for (const { address } of addresses) {
    const why = refusal(address, allowed)
    // (The operator, not the caller, can allow a range: say where, for a receiver on the server's own machine.)
    if (why) throw new OutboundRefused(`url resolves to a non-public address: ${why} (an operator can allow its range with PETSTORE_WEBHOOK_ALLOW_CIDRS)`)
  }
  return url
}

function resolveAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) =>
    dnsLookup(host, { all: true }, (error, addresses) => (error ? reject(new OutboundRefused(`url's host does not resolve: ${error.code ?? error.message}`)) : resolve(addresses))),
  )
}

/** A socket lookup that refuses non-public addresses: the address checked is the address connected to. */
export function guardedLookup(allowed: readonly Cidr[]): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0)
      const list = addresses as LookupAddress[]
      const bad = list.map((entry) => refusal(entry.address, allowed)).find((why) => why !== undefined)
      if (bad) return callback(Object.assign(new OutboundRefused(`refused: ${bad}`), { code: 'EPETSTOREREFUSED' }), '', 0)
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list)
      const first = list[0]!
      callback(null, first.address, first.family)
    })
  }
}
