/**
 * SSRF guard (PRODUCT.md §5): in production, webhooks are never sent to loopback, link-local, private
 * or otherwise internal addresses. The check runs on the address actually connected to (a DNS lookup
 * hook on the HTTP agent), so a name that re-resolves to an internal address is refused too.
 */
import * as dns from "node:dns"
import * as net from "node:net"

const blocked = new net.BlockList()
for (const [prefix, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4]
] as const) blocked.addSubnet(prefix, bits, "ipv4")
for (const [prefix, bits] of [["::", 128], ["::1", 128], ["fc00::", 7], ["fe80::", 10], ["ff00::", 8]] as const) {
  blocked.addSubnet(prefix, bits, "ipv6")
}

/** Whether an IP address is internal (IPv4-mapped IPv6 addresses are judged as their IPv4). */
export const isInternalAddress = (address: string): boolean => {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return blocked.check(mapped[1]!, "ipv4")
  const family = net.isIP(address)
  if (family === 0) return false
  return blocked.check(address, family === 4 ? "ipv4" : "ipv6")
}

export class SsrfRefused extends Error {
  constructor(readonly host: string, readonly address: string) {
    super(`SSRF guard: ${host} resolves to the internal address ${address}; refused in production mode`)
  }
}

/** The URL's host when it is an internal IP literal (IP literals skip DNS, so they are checked here). */
export const internalLiteral = (url: string): string | undefined => {
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, "")
    if (host === "localhost" || host.endsWith(".localhost")) return host
    return isInternalAddress(host) ? host : undefined
  } catch {
    return undefined
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | Array<dns.LookupAddress>, family?: number) => void

/** A `lookup` for sockets that refuses internal addresses. */
export const guardedLookup = (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, "", 0)
    const internal = addresses.find((entry) => isInternalAddress(entry.address))
    if (internal !== undefined) return callback(new SsrfRefused(hostname, internal.address), "", 0)
    if (options.all) return callback(null, addresses)
    const first = addresses[0]
    if (first === undefined) return callback(new Error(`No address for ${hostname}`), "", 0)
    callback(null, first.address, first.family)
  })
}
