/**
 * A TCP proxy to a real server, as a network-edge double for outages: `forward()` passes everything,
 * `blackhole()` accepts connections and stops every byte both ways (a partition, or a server that hung),
 * `refuse()` resets open connections and closes the port (a server that is down). Back to `forward()`,
 * what was held is delivered.
 */
import * as Effect from "effect/Effect"
import * as net from "node:net"

type Mode = "forward" | "blackhole" | "refuse"

interface Pair {
  readonly client: net.Socket
  upstream: net.Socket | undefined
  readonly held: Array<() => void>
}

export interface TcpProxy {
  readonly port: number
  readonly forward: Effect.Effect<void>
  readonly blackhole: Effect.Effect<void>
  readonly refuse: Effect.Effect<void>
}

/** A proxy on a free loopback port to `targetHost:targetPort`, closed with the scope. */
export const tcpProxy = (targetHost: string, targetPort: number) =>
  Effect.gen(function*() {
    let mode: Mode = "forward"
    const pairs = new Set<Pair>()

    const close = (pair: Pair) => {
      pairs.delete(pair)
      pair.client.destroy()
      pair.upstream?.destroy()
    }
    const pipe = (pair: Pair, from: net.Socket, to: () => net.Socket | undefined) =>
      from.on("data", (chunk: Buffer) => {
        if (mode === "forward") to()?.write(chunk)
        else pair.held.push(() => to()?.write(chunk))
      })
    const connectUpstream = (pair: Pair) => {
      const upstream = net.connect({ host: targetHost, port: targetPort })
      pair.upstream = upstream
      pipe(pair, upstream, () => pair.client)
      upstream.on("error", () => close(pair))
      upstream.on("close", () => close(pair))
    }
    const accept = (client: net.Socket) => {
      const pair: Pair = { client, upstream: undefined, held: [] }
      pairs.add(pair)
      pipe(pair, client, () => pair.upstream)
      client.on("error", () => close(pair))
      client.on("close", () => close(pair))
      if (mode === "forward") connectUpstream(pair)
    }

    let server = net.createServer(accept)
    const listen = (port: number) =>
      Effect.callback<number>((resume) => {
        server.listen(port, "127.0.0.1", () => {
          const address = server.address()
          resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : port))
        })
      })
    const closeServer = Effect.callback<void>((resume) => {
      if (!server.listening) return resume(Effect.void)
      server.close(() => resume(Effect.void))
    })
    const port = yield* listen(0)
    yield* Effect.addFinalizer(() =>
      Effect.andThen(Effect.sync(() => pairs.forEach(close)), closeServer)
    )

    const forward = Effect.gen(function*() {
      if (!server.listening) {
        server = net.createServer(accept)
        yield* listen(port)
      }
      mode = "forward"
      for (const pair of pairs) {
        if (pair.upstream === undefined) connectUpstream(pair)
        for (const write of pair.held.splice(0)) write()
      }
    })
    const blackhole = Effect.gen(function*() {
      if (!server.listening) {
        server = net.createServer(accept)
        yield* listen(port)
      }
      mode = "blackhole"
    })
    const refuse = Effect.gen(function*() {
      mode = "refuse"
      for (const pair of [...pairs]) {
        pair.client.resetAndDestroy()
        close(pair)
      }
      yield* closeServer
    })
    return { port, forward, blackhole, refuse } satisfies TcpProxy
  })
