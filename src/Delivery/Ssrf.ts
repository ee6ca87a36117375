/**
 * SSRF guard (docs/webhooks.md): in production, webhooks are never sent to loopback, link-local, private
 * or otherwise internal addresses. The check runs on the address actually connected to (a DNS lookup
 * hook on the HTTP agent), so a name that re-resolves to an internal address is refused too; URLs whose
 * host is an internal IP literal (or `localhost`) are refused when they are saved (`webhookUrlProblem`).
 */
import * as dns from "node:dns"
import * as net from "node:net"

/** IPv4 ranges that are not the public internet (IANA special-purpose registry, RFC 6890 and later). */
const blockedV4 = new net.BlockList()
for (const [prefix, bits] of [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // shared address space (carrier-grade NAT)
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (cloud metadata services live here)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation (TEST-NET-1)
  ["192.88.99.0", 24], // 6to4 relay anycast (deprecated)
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation (TEST-NET-2)
  ["203.0.113.0", 24], // documentation (TEST-NET-3)
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4] // reserved, and 255.255.255.255 (limited broadcast)
] as const) blockedV4.addSubnet(prefix, bits, "ipv4")

/**
 * IPv6 prefixes refused outright, as [first groups of 16 bits, prefix length]. The prefixes that embed
 * an IPv4 address (IPv4-mapped, NAT64, 6to4) are not here: they are judged by the address they embed.
 */
const blockedV6: ReadonlyArray<readonly [ReadonlyArray<number>, number]> = [
  [[0, 0, 0, 0, 0, 0], 96], // ::/96: unspecified, loopback and the deprecated IPv4-compatible addresses
  [[0, 0, 0, 0, 0xffff, 0], 96], // ::ffff:0:0:0/96 IPv4-translated (SIIT)
  [[0x64, 0xff9b, 1], 48], // local-use NAT64 (RFC 8215)
  [[0x100, 0, 0, 0], 64], // discard-only (RFC 6666)
  [[0x2001, 0], 23], // IETF protocol assignments: Teredo (2001::/32), benchmarking, ORCHID…
  [[0x2001, 0x0db8], 32], // documentation
  [[0x3fff, 0], 20], // documentation (RFC 9637)
  [[0x5f00], 16], // SRv6 SIDs (RFC 9602)
  [[0xfc00], 7], // unique local
  [[0xfe80], 10], // link-local
  [[0xfec0], 10], // site-local (deprecated)
  [[0xff00], 8] // multicast
]

/** The eight 16-bit groups of an IPv6 address, or undefined when it is none (a zone `%eth0` is ignored). */
const ipv6Groups = (address: string): ReadonlyArray<number> | undefined => {
  const text = address.replace(/%.*$/, "")
  if (net.isIPv6(text) === false) return undefined
  const [head = "", tail] = text.split("::")
  const parse = (part: string): Array<number> =>
    part === ""
      ? []
      : part.split(":").flatMap((group) => {
        if (group.includes(".")) {
          const [a = 0, b = 0, c = 0, d = 0] = group.split(".").map(Number)
          return [(a << 8) | b, (c << 8) | d]
        }
        return [parseInt(group, 16)]
      })
  const left = parse(head)
  if (tail === undefined) return left
  const right = parse(tail)
  return [...left, ...Array.from({ length: 8 - left.length - right.length }, () => 0), ...right]
}

const matches = (groups: ReadonlyArray<number>, prefix: ReadonlyArray<number>, bits: number): boolean => {
  for (let bit = 0; bit < bits; bit += 16) {
    const width = Math.min(16, bits - bit)
    const mask = (0xffff << (16 - width)) & 0xffff
    const index = bit / 16
    if (((groups[index] ?? 0) & mask) !== ((prefix[index] ?? 0) & mask)) return false
  }
  return true
}

const ipv4Of = (high: number, low: number): string => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`

/**
 * The IPv4 address an IPv6 address leads to, for the prefixes that embed one: IPv4-mapped
 * (`::ffff:0:0/96`, in any spelling: `::ffff:127.0.0.1`, `::ffff:7f00:1`), NAT64 (`64:ff9b::/96`) and
 * 6to4 (`2002::/16`, the IPv4 address in bits 16–47).
 */
const embeddedIpv4 = (groups: ReadonlyArray<number>): string | undefined => {
  const [g0 = 0, g1 = 0, g2 = 0, , , , g6 = 0, g7 = 0] = groups
  if (matches(groups, [0, 0, 0, 0, 0, 0xffff], 96)) return ipv4Of(g6, g7)
  if (matches(groups, [0x64, 0xff9b, 0, 0, 0, 0], 96)) return ipv4Of(g6, g7)
  if (g0 === 0x2002) return ipv4Of(g1, g2)
  return undefined
}

/**
 * Whether an IP address is internal. IPv6 addresses that embed an IPv4 address are judged by it;
 * anything that is not an IP address (a host name) is not internal here (DNS answers are judged when
 * the connection is made).
 */
export const isInternalAddress = (address: string): boolean => {
  if (net.isIPv4(address)) return blockedV4.check(address, "ipv4")
  const groups = ipv6Groups(address)
  if (groups === undefined || groups.length !== 8) return false
  const v4 = embeddedIpv4(groups)
  if (v4 !== undefined) return blockedV4.check(v4, "ipv4")
  return blockedV6.some(([prefix, bits]) => matches(groups, prefix, bits))
}

/**
 * The error a refused DNS answer produces: the agent's `lookup` fails with it, so the HTTP client's
 * transport error carries it as its cause (`code: "ERR_SSRF_REFUSED"`). Never worth retrying.
 */
export class SsrfRefused extends Error {
  override readonly name = "SsrfRefused"
  readonly code = "ERR_SSRF_REFUSED"
  constructor(readonly host: string, readonly address: string) {
    super(`SSRF guard: ${host} resolves to the internal address ${address}; refused in production mode`)
  }
}

const isLocalhostName = (host: string): boolean => {
  const name = host.toLowerCase().replace(/\.$/, "")
  return name === "localhost" || name.endsWith(".localhost")
}

/** The URL's host when it is an internal IP literal or a `localhost` name (IP literals skip DNS). */
export const internalLiteral = (url: string): string | undefined => {
  try {
    // WHATWG URL parsing normalizes every IPv4 spelling (`127.1`, `0x7f000001`) to dotted decimal.
    const host = new URL(url).hostname.replace(/^\[|\]$/g, "")
    if (isLocalhostName(host)) return host
    return isInternalAddress(host) ? host : undefined
  } catch {
    return undefined
  }
}

export interface UrlProblem {
  readonly type: "url_internal"
  readonly msg: string
}

/**
 * Whether a webhook URL may be saved in this mode: in production, a host that is an internal IP
 * literal or `localhost` is refused (422 at `["body","webhook","url"]`); names are judged again on
 * every connection. Development mode allows everything (local receivers).
 */
export const webhookUrlProblem = (url: string, mode: "development" | "production"): UrlProblem | undefined => {
  if (mode !== "production") return undefined
  const host = internalLiteral(url)
  return host === undefined ? undefined : {
    type: "url_internal",
    msg: `The webhook host ${host} is an internal address; refused in production mode`
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
