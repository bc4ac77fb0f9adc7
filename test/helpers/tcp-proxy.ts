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
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'

export interface TcpProxy {
  /** The port the proxy listens on, on 127.0.0.1. */
  port: number
  /** Sends an RST to every client connected now (it reads ECONNRESET) and drops its upstream; returns how many. */
  reset(): number
  /** Sends a FIN both ways on every connection open now; returns how many. */
  close(): number
  /** Drops every upstream now and answers each client's next bytes with an RST, or the first after `silentMs`; returns how many. */
  forget(silentMs?: number): number
  /** Stops listening and destroys every connection. */
  stop(): Promise<void>
}

interface Pair {
  client: Socket
  upstream: Socket
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<Pair>()
  /** Connections cut by forget() whose client has not sent anything since. */
  const forgotten = new Set<Socket>()

  const server = createServer((client) => {
    const upstream = connect(target.port, target.host)
    const pair = { client, upstream }
    pairs.add(pair)
    client.pipe(upstream)
    upstream.pipe(client)
    // Either side failing takes the other down with it, as a real path would; an
    // error left unheard here would end the test process instead.
    const drop = () => {
      if (!pairs.delete(pair)) return // cut already: the cut decides what the other side sees
      client.destroy()
      upstream.destroy()
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })

  /** Takes every open connection out of the proxy's hands, with the data between them stopped. */
  function cutAll(): Pair[] {
    const cut = [...pairs]
    pairs.clear()
    for (const { client, upstream } of cut) {
      client.unpipe(upstream)
      upstream.unpipe(client)
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
