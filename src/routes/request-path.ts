// The router refuses some paths before any hook runs: a parameter longer than its
// maxParamLength, a path whose percent-encoding does not decode. Such a request
// would skip the /v1 steps (request id, rate limit, key check; decisions D5-D7
// apply to every /v1 request, whatever its path), so neither refusal may happen
// in the router: parameters may be as long as a request line can be, and a path
// that does not decode is routed as the literal text it is, then answered by the
// route (400, the parameter is not an id) or as an unknown route (404).
import type { IncomingMessage } from 'node:http'

/** Node refuses request heads over 16 KiB (431), so no path parameter is longer. */
export const MAX_PARAM_LENGTH = 16 * 1024

/** For Fastify's `rewriteUrl`: the URL as sent, unless its path does not decode. */
export function routablePath(request: IncomingMessage): string {
  const url = request.url ?? '/'
  // The common case costs one scan: nothing is percent-encoded.
  if (!url.includes('%')) return url
  const query = url.indexOf('?')
  const path = query === -1 ? url : url.slice(0, query)
  try {
    decodeURIComponent(path)
    return url
  } catch {
    // "%zz" stands for itself: escape every % so the path decodes to what was sent.
    return path.replaceAll('%', '%25') + (query === -1 ? '' : url.slice(query))
  }
}
