// Standard Webhooks v1 signatures (https://www.standardwebhooks.com): the secret is
// `whsec_` and base64 of random bytes; the signature is `v1,` and base64 of
// HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}`, keyed with those bytes.
import { createHmac, randomBytes } from 'node:crypto'

const PREFIX = 'whsec_'

export function newSecret(): string {
  return `${PREFIX}${randomBytes(24).toString('base64')}`
}

export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

/** The `webhook-signature` header: the current secret's, and the previous one's while it is in its grace period. */
export function signatureHeader(secrets: { secret: string; previousSecret: string | null; previousSecretUntil: number | null }, id: string, timestamp: number, body: string, now: number): string {
  const signatures = [sign(secrets.secret, id, timestamp, body)]
  if (secrets.previousSecret !== null && (secrets.previousSecretUntil ?? 0) > now) signatures.push(sign(secrets.previousSecret, id, timestamp, body))
  return signatures.join(' ')
}
