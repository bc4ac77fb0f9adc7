// npm run soak: about a minute of mixed traffic from several keys against a real
// server process, some keys far over their limits. Bounded in time, loopback only.
// Reports 5xx (must be 0), RSS over time (should stay flat) and whether every key
// got exactly its limit in each UTC minute in which it was refused. Exits 1 if not.
import { readFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { issueTestKey } from '../test/helpers/keys.js'
import { openStore } from '../src/db/open-store.js'
import { spawnServer } from '../test/helpers/process.js'

const SECONDS = Number(process.argv[2] ?? 60)
const dir = mkdtempSync(join(tmpdir(), 'petstore-soak-'))
const databaseUrl = `sqlite:${join(dir, 'soak.db')}`

const store = await openStore(databaseUrl)
const key = async (perMinute: number) =>
  (await issueTestKey(store.apiKeys, { name: `soak ${perMinute}`, plan: 'enterprise', custom: { perMinute, perDay: 10_000_000 } })).secret
const clients = [
  { name: 'heavy (within its limit)', key: await key(100_000), perMinute: 100_000, concurrency: 8 },
  { name: 'over (120/min)', key: await key(120), perMinute: 120, concurrency: 4 },
  { name: 'over (60/min)', key: await key(60), perMinute: 60, concurrency: 4 },
  { name: 'no key', key: '', perMinute: 60, concurrency: 1 },
]
await store.close()

const server = await spawnServer({ DATABASE_URL: databaseUrl, PETSTORE_BAN_AFTER: '1000000' }) // info: the default, and spawnServer waits for the "listening" line
const pid = server.child.pid!
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024
const samples: [number, number][] = []
const started = Date.now()
const deadline = started + SECONDS * 1000
const sampler = setInterval(() => samples.push([Math.round((Date.now() - started) / 1000), Math.round(rss())]), 5_000)

const statuses = new Map<number, number>()
// Per client and UTC minute window as the limiter saw it: requests the limiter counted,
// and whether any was refused. The window comes from the RateLimit header's minute
// policy (`"minute";r=…;t=<seconds to its end>`), not X-RateLimit-Reset, which names
// the day's end once the day has fewer requests left than the minute.
const minutes = new Map<string, { client: (typeof clients)[number]; minute: string; counted: number; refused: boolean }>()
let failures = 0

/** The UTC minute (ISO, to the minute) whose window the answer was counted in. */
function minuteWindow(ratelimit: string | null): string {
  const secondsLeft = Number(/"minute";r=\d+;t=(\d+)/.exec(ratelimit ?? '')?.[1])
  if (!Number.isFinite(secondsLeft)) throw new Error(`no minute policy in RateLimit: ${ratelimit}`)
  // The window ends on a whole minute; rounding absorbs `t` being whole seconds and the answer's latency.
  const end = Math.round((Date.now() / 1000 + secondsLeft) / 60) * 60
  return new Date((end - 60) * 1000).toISOString().slice(0, 16)
}

async function loop(client: (typeof clients)[number], worker: number) {
  for (let i = 0; Date.now() < deadline; i++) {
    const headers: Record<string, string> = { 'content-type': 'application/json' }
    if (client.key) headers.authorization = `Bearer ${client.key}`
    const kind = i % 4
    try {
      const res =
        kind === 3
          ? await fetch(server.url + '/v1/pets', { method: 'POST', headers, body: JSON.stringify({ name: `soak ${worker}-${i}`, categoryId: 1 + (i % 7), status: 'sold' }) })
          : await fetch(server.url + (kind === 0 ? '/v1/pets?status=sold&limit=20' : kind === 1 ? `/v1/pets/${1 + (i % 50)}` : '/v1/pets?limit=5'), { headers })
      await res.arrayBuffer()
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      const minute = minuteWindow(res.headers.get('ratelimit'))
      const entry = minutes.get(`${client.name} ${minute}`) ?? { client, minute, counted: 0, refused: false }
      minutes.set(`${client.name} ${minute}`, entry)
      // Every answer but a 429 counts against the limit (a 401 too, per client address).
      if (res.status === 429) entry.refused = true
      else entry.counted++
    } catch {
      failures++
    }
  }
}
await Promise.all(clients.flatMap((client) => Array.from({ length: client.concurrency }, (_, w) => loop(client, w))))
clearInterval(sampler)
server.child.kill('SIGTERM')
await server.exited
rmSync(dir, { recursive: true, force: true })

const fiveXX = [...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0)
console.log(`soak: ${SECONDS} s, statuses ${JSON.stringify(Object.fromEntries(statuses))}, network failures ${failures}`)
console.log(`RSS (MB) over time: ${samples.map(([t, mb]) => `${t}s=${mb}`).join(' ')}`)
// Exact: never more than the limit in a minute, and exactly the limit in a minute
// with a refusal (a refusal before the limit is reached would be a bug too).
let exact = true
for (const { client, minute, counted, refused } of minutes.values()) {
  const ok = refused ? counted === client.perMinute : counted <= client.perMinute
  if (!ok) exact = false
  console.log(`  ${client.name.padEnd(26)} ${minute}Z counted ${String(counted).padStart(6)} of ${client.perMinute}/min${refused ? ', then refused' : ''}${ok ? '' : '  <-- WRONG'}`)
}
const growth = samples.length > 2 ? samples.at(-1)![1] - samples[1]![1] : 0
console.log(`5xx: ${fiveXX}; limits exact: ${exact}; RSS growth after warm-up: ${growth} MB`)
process.exitCode = fiveXX === 0 && exact && failures === 0 ? 0 : 1
