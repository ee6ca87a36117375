// Small network helpers: a free TCP port, and a TCP proxy that can simulate a network partition.
import * as net from "node:net"

const isFree = (port) =>
  new Promise((resolve) => {
    const server = net.createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })

/** The first free port from `from` on (or any free port when `from` is 0). */
export const freePort = async (from = 0) => {
  if (from === 0) {
    return await new Promise((resolve) => {
      const server = net.createServer()
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address()
        server.close(() => resolve(port))
      })
    })
  }
  for (let port = from; port < from + 1000; port++) if (await isFree(port)) return port
  throw new Error(`No free port from ${from}`)
}

/**
 * A TCP proxy from a local port to `target`. `partition()` stops every byte in both directions and
 * holds new connections (as a network partition does: nothing is refused, nothing arrives);
 * `heal()` lets everything flow again; `cut()` resets every open connection.
 */
export const startProxy = async (targetPort) => {
  const pairs = new Set()
  const held = []
  let partitioned = false
  const connect = (client) => {
    const upstream = net.connect({ host: "127.0.0.1", port: targetPort })
    const pair = { client, upstream }
    pairs.add(pair)
    const forward = (from, to) =>
      from.on("data", (chunk) => {
        if (partitioned) {
          from.pause()
          pair.stalled = [...(pair.stalled ?? []), () => to.write(chunk)]
        } else {
          to.write(chunk)
        }
      })
    forward(client, upstream)
    forward(upstream, client)
    const close = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on("error", close)
    upstream.on("error", close)
    client.on("close", close)
    upstream.on("close", close)
  }
  const server = net.createServer((client) => {
    if (partitioned) {
      client.pause()
      held.push(client)
    } else {
      connect(client)
    }
  })
  const port = await freePort(0)
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve))
  return {
    port,
    partition: () => {
      partitioned = true
      for (const { client, upstream } of pairs) {
        client.pause()
        upstream.pause()
      }
    },
    heal: () => {
      partitioned = false
      for (const pair of pairs) {
        for (const write of pair.stalled ?? []) write()
        pair.stalled = []
        pair.client.resume()
        pair.upstream.resume()
      }
      for (const client of held.splice(0)) {
        connect(client)
        client.resume()
      }
    },
    cut: () => {
      for (const { client, upstream } of pairs) {
        client.destroy()
        upstream.destroy()
      }
      pairs.clear()
    },
    close: () =>
      new Promise((resolve) => {
        for (const { client, upstream } of pairs) {
          client.destroy()
          upstream.destroy()
        }
        for (const client of held) client.destroy()
        server.close(() => resolve())
      })
  }
}
