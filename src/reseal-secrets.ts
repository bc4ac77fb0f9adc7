// `npm run reseal-secrets` (`node dist/reseal-secrets.js`): seals every webhook signing
// secret, and every secret an Idempotency-Key record keeps for a replay, again with
// PETSTORE_SECRET_KEY, after a main key rotation (docs/operations.md) or to seal the
// signing secrets stored before they were sealed. Safe to run while servers and
// dispatchers run, and to run again.
import { pathToFileURL } from 'node:url'
import { loadConfig, loadDotEnv, redactUrl, type Config } from './config.js'
import { openStoreFromConfig } from './db/from-config.js'
import { resealReplays, resealSecrets } from './secrets/reseal.js'
import { secretBoxFromConfig } from './secrets/secret-box.js'

type Resealed = { resealed: number; current: number }

async function runReseal(config: Config): Promise<{ endpoints: Resealed; replays: Resealed }> {
  const secrets = secretBoxFromConfig(config)
  const store = await openStoreFromConfig(config, { migrations: { apply: 'fresh' } })
  try {
    return { endpoints: await resealSecrets(store.webhookEndpoints, secrets), replays: await resealReplays(store.idempotency, secrets) }
  } finally {
    await store.close()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  Promise.resolve()
    .then(async () => {
      loadDotEnv()
      const config = loadConfig()
      const { endpoints, replays } = await runReseal(config)
      console.log(
        `petstore: ${endpoints.resealed} webhook endpoint(s) and ${replays.resealed} Idempotency-Key replay(s) resealed with the current key, ${endpoints.current} and ${replays.current} already were (${redactUrl(config.databaseUrl)})`,
      )
    })
    .catch((error: unknown) => {
      console.error(`petstore: ${error instanceof Error ? error.message : String(error)}`)
      process.exit(1)
    })
}
