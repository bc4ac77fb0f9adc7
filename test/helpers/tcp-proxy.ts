// A TCP proxy a test can cut: put between the service and PostgreSQL, it passes
// connections through until told to cut those open now. New connections pass through
// again at once. Three ways to cut, as connections are lost in production:
// - reset: an RST to the client now (a load balancer or firewall dropping them);
// - close: a FIN both ways now (a server or a proxy shutting down politely);
// - forget: nothing now, and an RST once the client next sends (a NAT or stateful
//   firewall that lost its state): a client idle at the cut hears of it only when it
//   uses the connection again, and one waiting for an answer never does. Optionally
//   after a silence, during which what the client sends is lost unanswered (a
//   network partition), so that every connection in use is caught waiting.
// And a partition that heals: silence() holds every byte of every connection, open or
// new, until heal() lets them through, as TCP retransmits what was not acknowledged.
// A side that resets its connection meanwhile takes its held bytes with it (as an RST
// discards a socket's unsent data); one that closes politely does not (its kernel
// would still deliver them).
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'

export interface TcpProxy {
  /** The port the proxy listens on (on 127.0.0.1, or the host it was given). */
  port: number
  /** Sends an RST to every client connected now (it reads ECONNRESET) and drops its upstream; returns how many. */
  reset(): number
  /** Sends a FIN both ways on every connection open now; returns how many. */
  close(): number
  /** Drops every upstream now and answers each client's next bytes with an RST, or the first after `silentMs`; returns how many. */
  forget(silentMs?: number): number
  /** Holds every byte both ways, on connections open now and new ones, until heal(). */
  silence(): void
  /** Delivers what was held, and passes bytes through again, without added latency. */
  heal(): void
  /** Delays every chunk, both ways, by `ms` (order kept), on connections open now and new ones, until heal(). */
  delay(ms: number): void
  /** Stops listening and destroys every connection. */
  stop(): Promise<void>
}

interface Pair {
  client: Socket
  upstream: Socket
  /** While silent: what each side sent, not yet delivered to the other. */
  held?: { kind: 'silence' | 'delay'; toUpstream: Buffer[]; toClient: Buffer[]; clientEnded: boolean; stop(): void }
}

export async function startTcpProxy(target: { host: string; port: number }, { listenHost = '127.0.0.1' }: { listenHost?: string } = {}): Promise<TcpProxy> {
  const pairs = new Set<Pair>()
  /** Connections cut by forget() whose client has not sent anything since. */
  const forgotten = new Set<Socket>()

  let silent = false
  let latencyMs = 0
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host)
    const pair: Pair = { client, upstream }
    pairs.add(pair)
    if (silent) holdBoth(pair)
    else if (latencyMs > 0) delayBoth(pair, latencyMs)
    else pipeBoth(pair)
    // Either side failing takes the other down with it, as a real path would; an
    // error left unheard here would end the test process instead.
    const drop = () => {
      if (!pairs.delete(pair)) return // cut already: the cut decides what the other side sees
      client.destroy()
      upstream.destroy()
    }
    // A client that resets takes what was held with it; one that closes politely
    // while silent has its bytes (and its FIN) delivered at the heal.
    client.on('error', drop).on('close', () => {
      if (pair.held?.kind === 'silence' && !client.errored) pair.held.clientEnded = true
      else drop()
    })
    upstream.on('error', drop).on('close', drop)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, listenHost, () => resolve())
  })

  /** Bytes flow both ways. */
  function pipeBoth({ client, upstream }: Pair) {
    client.pipe(upstream)
    upstream.pipe(client)
  }

  /** Bytes stop, and wait here: read (so that a reset is noticed at once), and held. */
  function holdBoth(pair: Pair) {
    const { client, upstream } = pair
    client.unpipe(upstream)
    upstream.unpipe(client)
    const toUpstream: Buffer[] = []
    const toClient: Buffer[] = []
    const fromClient = (chunk: Buffer) => toUpstream.push(chunk)
    const fromUpstream = (chunk: Buffer) => toClient.push(chunk)
    client.on('data', fromClient)
    upstream.on('data', fromUpstream)
    pair.held = {
      kind: 'silence',
      toUpstream,
      toClient,
      clientEnded: false,
      stop() {
        client.off('data', fromClient)
        upstream.off('data', fromUpstream)
      },
    }
  }

  /** Every chunk written on after `ms`: a slow path, in order. */
  function delayBoth(pair: Pair, ms: number) {
    const { client, upstream } = pair
    client.unpipe(upstream)
    upstream.unpipe(client)
    const later = (to: Socket) => (chunk: Buffer) => void setTimeout(() => to.destroyed || to.write(chunk), ms)
    const fromClient = later(upstream)
    const fromUpstream = later(client)
    client.on('data', fromClient)
    upstream.on('data', fromUpstream)
    pair.held = {
      kind: 'delay',
      toUpstream: [],
      toClient: [],
      clientEnded: false,
      stop() {
        client.off('data', fromClient)
        upstream.off('data', fromUpstream)
      },
    }
  }

  /** Delivers what was held, then bytes flow again (or the client's polite close goes through). */
  function release(pair: Pair) {
    const held = pair.held
    if (!held) return pipeBoth(pair)
    held.stop()
    pair.held = undefined
    for (const chunk of held.toUpstream) pair.upstream.write(chunk)
    if (held.clientEnded) {
      pairs.delete(pair)
      pair.upstream.end()
      return
    }
    for (const chunk of held.toClient) pair.client.write(chunk)
    pipeBoth(pair)
  }

  /** Takes every open connection out of the proxy's hands, with the data between them stopped. */
  function cutAll(): Pair[] {
    const cut = [...pairs]
    pairs.clear()
    for (const pair of cut) {
      pair.held?.stop()
      pair.held = undefined
      pair.client.unpipe(pair.upstream)
      pair.upstream.unpipe(pair.client)
    }
    return cut
  }

  return {
    port: (server.address() as AddressInfo).port,
    reset() {
      const cut = cutAll()
      for (const { client, upstream } of cut) {
        client.resetAndDestroy()
        upstream.destroy()
      }
      return cut.length
    },
    close() {
      const cut = cutAll()
      for (const { client, upstream } of cut) {
        client.end()
        upstream.end()
        // An end that never answers our FIN is not kept open forever.
        setTimeout(() => {
          client.destroy()
          upstream.destroy()
        }, 1_000).unref()
      }
      return cut.length
    },
    forget(silentMs = 0) {
      const cut = cutAll()
      const silentUntil = performance.now() + silentMs
      for (const { client, upstream } of cut) {
        upstream.destroy()
        forgotten.add(client)
        client.on('data', () => {
          if (performance.now() < silentUntil) return
          forgotten.delete(client)
          client.resetAndDestroy()
        })
        client.once('close', () => forgotten.delete(client))
        client.resume()
      }
      return cut.length
    },
    silence() {
      silent = true
      for (const pair of pairs) holdBoth(pair)
    },
    heal() {
      silent = false
      latencyMs = 0
      for (const pair of [...pairs]) release(pair)
    },
    delay(ms) {
      latencyMs = ms
      for (const pair of pairs) {
        pair.held?.stop()
        pair.held = undefined
        delayBoth(pair, ms)
      }
    },
    async stop() {
      for (const { client, upstream } of cutAll()) {
        client.destroy()
        upstream.destroy()
      }
      for (const client of forgotten) client.destroy()
      forgotten.clear()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
