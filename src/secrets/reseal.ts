// A main key rotation's second half: every secret not sealed with the current key (an
// old key's, or a signing secret stored before secrets were sealed) is sealed again
// with it: the webhook signing secrets, and the secrets Idempotency-Key records keep
// for a replay. Once it has run, the old key can leave PETSTORE_SECRET_KEY_PREVIOUS.
import type { IdempotencyScope, IdempotencyStore } from '../db/idempotency-store.js'
import type { StoredSecrets, WebhookEndpointsStore } from '../db/webhook-endpoints-store.js'
import type { SecretBox } from './secret-box.js'

const PAGE = 500

/** Reseals what needs it, a page of endpoints at a time; answers how many endpoints were resealed, and how many already were. */
export async function resealSecrets(endpoints: WebhookEndpointsStore, secrets: SecretBox): Promise<{ resealed: number; current: number }> {
  let resealed = 0
  let current = 0
  for (let afterId = 0; ; ) {
    const page = await endpoints.secrets(afterId, PAGE)
    for (const { id, ...stored } of page) {
      if (!secrets.stale(stored.secret) && (stored.previousSecret === null || !secrets.stale(stored.previousSecret))) {
        current++
        continue
      }
      const sealed: StoredSecrets = {
        secret: secrets.seal(secrets.open(stored.secret)),
        previousSecret: stored.previousSecret === null ? null : secrets.seal(secrets.open(stored.previousSecret)),
      }
      // Rotated meanwhile: the rotation sealed with the current key already.
      if (await endpoints.replaceSecrets(id, stored, sealed)) resealed++
      else current++
    }
    if (page.length < PAGE) return { resealed, current }
    afterId = page.at(-1)!.id
  }
}

/**
 * Reseals the secrets Idempotency-Key records keep for a replay (a new key's, a new
 * endpoint's; each lives 24 hours), a page at a time; answers how many records were
 * resealed, and how many already were. Without it, a replay after the old key left
 * PETSTORE_SECRET_KEY_PREVIOUS could not open its secret.
 */
export async function resealReplays(records: IdempotencyStore, secrets: SecretBox): Promise<{ resealed: number; current: number }> {
  const box = secrets.for('replayed secret')
  let resealed = 0
  let current = 0
  for (let after: IdempotencyScope | undefined; ; ) {
    const page = await records.sealedSecrets(after, PAGE)
    for (const { sealedSecret, ...scope } of page) {
      // Replaced meanwhile (taken over, or gone): its new secret was sealed with the current key.
      if (box.stale(sealedSecret) && (await records.replaceSealedSecret(scope, sealedSecret, box.seal(box.open(sealedSecret))))) resealed++
      else current++
    }
    if (page.length < PAGE) return { resealed, current }
    const last = page.at(-1)!
    after = { accountId: last.accountId, key: last.key }
  }
}
