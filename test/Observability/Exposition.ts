/**
 * Scraping Parley's Prometheus endpoint in tests: a free port, a real HTTP GET of `/metrics`, and a
 * reader of the text exposition format (enough of it for the exporter's output).
 */
import * as Effect from "effect/Effect"
import * as net from "node:net"

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Exposition {
  readonly samples: ReadonlyArray<Sample>
  /** `# TYPE` of each metric family: `counter`, `gauge`, `histogram`. */
  readonly types: ReadonlyMap<string, string>
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

const parseValue = (text: string): number =>
  text === "+Inf" ? Infinity : text === "-Inf" ? -Infinity : Number(text)

export const parseExposition = (text: string): Exposition => {
  const samples: Array<Sample> = []
  const types = new Map<string, string>()
  for (const line of text.split("\n")) {
    if (line.startsWith("# TYPE ")) {
      const [name, type] = line.slice("# TYPE ".length).split(" ")
      if (name !== undefined && type !== undefined) types.set(name, type)
      continue
    }
    if (line.startsWith("#") || line.trim() === "") continue
    const match = SAMPLE.exec(line)
    if (match === null) throw new Error(`Not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const label of (match[2] ?? "").matchAll(LABEL)) labels[label[1]!] = label[2]!.replace(/\\(.)/g, "$1")
    samples.push({ name: match[1]!, labels, value: parseValue(match[3]!) })
  }
  return { samples, types }
}

/** The samples of `name` whose labels include `labels`. */
export const find = (exposition: Exposition, name: string, labels: Readonly<Record<string, string>> = {}) =>
  exposition.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))

/** A port nothing listens on right now (the exporter cannot listen on port 0 and tell which it got). */
export const freePort = Effect.callback<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

export const scrape = (port: number, path = "/metrics") =>
  Effect.promise(async () => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`)
    return { status: response.status, contentType: response.headers.get("content-type"), body: await response.text() }
  })

/** Whether anything answers HTTP on the port. */
export const answers = (port: number) =>
  Effect.promise(() => fetch(`http://127.0.0.1:${port}/metrics`).then(() => true, () => false))
