// `npm run reseal-secrets` (`node dist/reseal-secrets.js`): seals every webhook signing
// secret again with PETSTORE_SECRET_KEY, after a main key rotation (docs/operations.md)
// or to seal the secrets stored before they were sealed. Safe to run while servers and
// dispatchers run, and to run again.
import { pathToFileURL } from 'node:url'
import { loadConfig, loadDotEnv, redactUrl, type Config } from './config.js'
import { openStoreFromConfig } from './db/from-config.js'
import { resealSecrets } from './secrets/reseal.js'
import { secretBoxFromConfig } from './secrets/secret-box.js'

async function runReseal(config: Config): Promise<{ resealed: number; current: number }> {
  const secrets = secretBoxFromConfig(config)
  const store = await openStoreFromConfig(config)
  try {
    return await resealSecrets(store.webhookEndpoints, secrets)
  } finally {
    await store.close()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  Promise.resolve()
    .then(async () => {
      loadDotEnv()
      const config = loadConfig()
      const { resealed, current } = await runReseal(config)
      console.log(`petstore: ${resealed} webhook endpoint(s) resealed with the current key, ${current} already were (${redactUrl(config.databaseUrl)})`)
    })
    .catch((error: unknown) => {
      console.error(`petstore: ${error instanceof Error ? error.message : String(error)}`)
      process.exit(1)
    })
}
