// A main key rotation's second half: every signing secret not sealed with the current
// key (an old key's, or one stored before secrets were sealed) is sealed again with it.
// Once it has run, the old key can leave PETSTORE_SECRET_KEY_PREVIOUS.
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
