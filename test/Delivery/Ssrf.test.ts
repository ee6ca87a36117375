/**
 * The SSRF guard's address judgement (every spelling of an internal address, the IPv6 forms that
 * embed an IPv4 address) and the production check of webhook URLs at create/update time.
 */
import { describe, expect, it } from "@effect/vitest"
import { guardedLookup, isInternalAddress, SsrfRefused, webhookUrlProblem } from "../../src/Delivery/Ssrf.js"

const internal: ReadonlyArray<readonly [string, string]> = [
  ["127.0.0.1", "loopback"],
  ["10.1.2.3", "private"],
  ["169.254.169.254", "link-local (cloud metadata)"],
  ["0.0.0.0", "this network"],
  ["100.64.0.1", "shared address space"],
  ["192.0.2.10", "documentation TEST-NET-1"],
  ["198.51.100.7", "documentation TEST-NET-2"],
  ["203.0.113.99", "documentation TEST-NET-3"],
  ["192.88.99.1", "6to4 relay anycast"],
  ["255.255.255.255", "limited broadcast"],
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["0:0:0:0:0:0:0:1", "loopback, long form"],
  ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
  ["::ffff:7f00:1", "IPv4-mapped loopback, hex"],
  ["::FFFF:7F00:0001", "IPv4-mapped loopback, upper-case hex"],
  ["0:0:0:0:0:ffff:7f00:1", "IPv4-mapped loopback, long form"],
  ["::ffff:a9fe:a9fe", "IPv4-mapped metadata address"],
  ["::ffff:10.0.0.1", "IPv4-mapped private"],
  ["::ffff:0:7f00:1", "IPv4-translated (SIIT)"],
  ["::127.0.0.1", "IPv4-compatible"],
  ["::7f00:1", "IPv4-compatible, hex"],
  ["::8.8.8.8", "IPv4-compatible (deprecated, refused whatever it embeds)"],
  ["64:ff9b::127.0.0.1", "NAT64 of loopback"],
  ["64:ff9b::7f00:1", "NAT64 of loopback, hex"],
  ["64:ff9b::a9fe:a9fe", "NAT64 of the metadata address"],
  ["64:ff9b::c0a8:101", "NAT64 of 192.168.1.1"],
  ["64:ff9b:1::1", "local-use NAT64"],
  ["2002:7f00:1::", "6to4 of loopback"],
  ["2002:0a00:0001::1", "6to4 of 10.0.0.1"],
  ["2002:c0a8:0101:1::5", "6to4 of 192.168.1.1"],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"],
  ["2001:db8::1", "documentation"],
  ["3fff::1", "documentation (RFC 9637)"],
  ["100::1", "discard-only"],
  ["fec0::1", "site-local (deprecated)"],
  ["fc00::1", "unique local"],
  ["fd12:3456::1", "unique local"],
  ["fe80::1", "link-local"],
  ["fe80::1%eth0", "link-local with a zone"],
  ["ff02::1", "multicast"],
  ["5f00::1", "SRv6 SIDs"]
]

const external: ReadonlyArray<readonly [string, string]> = [
  ["93.184.216.34", "public IPv4"],
  ["8.8.8.8", "public IPv4"],
  ["1.1.1.1", "public IPv4"],
  ["2606:4700:4700::1111", "public IPv6"],
  ["2a00:1450:4001:80b::200e", "public IPv6"],
  ["::ffff:8.8.8.8", "IPv4-mapped public"],
  ["::ffff:808:808", "IPv4-mapped public, hex"],
  ["64:ff9b::8.8.8.8", "NAT64 of a public address"],
  ["64:ff9b::808:808", "NAT64 of a public address, hex"],
  ["2002:0808:0808::1", "6to4 of a public address"]
]

describe("isInternalAddress", () => {
  it.each(internal)("%s (%s) is internal", (address) => {
    expect(isInternalAddress(address)).toBe(true)
  })
  it.each(external)("%s (%s) is not internal", (address) => {
    expect(isInternalAddress(address)).toBe(false)
  })
  it("a host name is not an address", () => {
    expect(isInternalAddress("example.com")).toBe(false)
    expect(isInternalAddress("")).toBe(false)
  })
})

describe("guardedLookup", () => {
  it("refuses a name that resolves to loopback with an SsrfRefused error", async () => {
    const error = await new Promise<unknown>((resolve) =>
      guardedLookup("localhost", {}, (failure) => {
        resolve(failure)
      })
    )
    expect(error).toBeInstanceOf(SsrfRefused)
    expect(error).toMatchObject({ name: "SsrfRefused", code: "ERR_SSRF_REFUSED", host: "localhost" })
  })
})

describe("webhookUrlProblem", () => {
  const refusedInProduction = [
    "http://127.0.0.1/hook",
    "http://127.1/hook",
    "http://0x7f000001/hook",
    "http://2130706433/hook",
    "http://localhost:8080/hook",
    "http://LOCALHOST/hook",
    "http://localhost./hook",
    "http://api.localhost/hook",
    "http://[::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "https://[::ffff:7f00:1]/hook",
    "http://[64:ff9b::169.254.169.254]/latest/meta-data",
    "http://[2002:7f00:1::]/hook",
    "http://[::]/hook",
    "http://169.254.169.254/latest/meta-data",
    "http://10.0.0.5:9000/hook",
    "http://192.168.1.1/hook",
    "http://[fe80::1]/hook"
  ]

  it.each(refusedInProduction)("production refuses %s as url_internal", (url) => {
    const problem = webhookUrlProblem(url, "production")
    expect(problem).toMatchObject({ type: "url_internal", msg: expect.stringContaining("internal") })
  })

  it.each(refusedInProduction)("development accepts %s", (url) => {
    expect(webhookUrlProblem(url, "development")).toBeUndefined()
  })

  it.each([
    "https://hooks.example.com/parley",
    "http://93.184.216.34/hook",
    "https://[2606:4700:4700::1111]/hook",
    "https://localhost.example.com/hook"
  ])("production accepts %s (names are judged again at connect time)", (url) => {
    expect(webhookUrlProblem(url, "production")).toBeUndefined()
  })

  it("is not a URL parser: an unparsable URL is left to the url schema", () => {
    expect(webhookUrlProblem("not a url", "production")).toBeUndefined()
  })
})
