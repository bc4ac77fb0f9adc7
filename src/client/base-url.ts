// The API's base URL: the OpenAPI `servers` end in /v1 and operation paths start
// at /pets, but people also write the bare host. Both are accepted.

/** `http://host:8080`, `http://host:8080/v1/` and `http://host:8080/v1` all give `http://host:8080/v1`. */
export function normalizeBaseUrl(baseUrl: string): string {
  let url: URL
  try {
    url = new URL(baseUrl)
  } catch {
    throw new TypeError(`petstore client: baseUrl is not a URL: "${baseUrl}"`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`petstore client: baseUrl must be http: or https:, got "${baseUrl}"`)
  }
  const path = url.pathname.replace(/\/+$/, '')
  // A path prefix (a proxy's /api, say) is kept; only the version segment is added.
  return `${url.origin}${path.endsWith('/v1') ? path : `${path}/v1`}`
}
