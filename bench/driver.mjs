// The load generator, run as its own process (forked by run.mjs) so that it shares no event loop with
// Parley, the baseline or the runner. Every figure it returns is raw: one latency sample per response.
//
//   autocannon  closed loop: N connections as fast as the server answers (max throughput), or paced by
//               autocannon's own rate limit (overallRate: a per-second budget, spent in a burst)
//   paced       open loop: requests scheduled evenly at `rate` per second whatever the server does;
//               latency counts from the scheduled time, so a stalled server is not hidden
//   abortProbe  requests whose client destroys the socket mid-request, each followed by a normal one
//   sequential  one request after another (a long conversation imported message by message)
//   get         closed-loop GETs of one URL (the floor scenario)
import autocannon from "autocannon"
import { Agent, request } from "node:http"
import { serve } from "./lib/ipc-child.mjs"
import { conversationOf, messageBody, messagePath } from "./lib/messages.mjs"
import { nowMs, sleep } from "./lib/proc.mjs"

const headersFor = (token) => ({ "content-type": "application/json", authorization: `Bearer ${token}` })

const runOne = (options) =>
  new Promise((resolve, reject) => {
    const instance = autocannon(options, (error, result) => (error ? reject(error) : resolve(result)))
    options.onInstance(instance)
  })

/**
 * Closed-loop load with autocannon against one or more Parley (or baseline) URLs at once. Message
 * indices are shared across targets, so every body is unique.
 */
const runAutocannon = async ({
  targets,
  token,
  integrationId,
  spec,
  connections,
  durationS,
  amount,
  overallRate,
  startIndex = 0,
  timeoutS = 30
}) => {
  let next = startIndex
  const samples = []
  const statuses = {}
  const started = nowMs()
  const results = await Promise.all(targets.map((url, t) =>
    runOne({
      url,
      connections,
      pipelining: 1,
      timeout: timeoutS,
      ...(durationS !== undefined ? { duration: durationS } : {}),
      // `amount` is split across targets; the remainder goes to the first.
      ...(amount !== undefined
        ? { amount: Math.floor(amount / targets.length) + (t === 0 ? amount % targets.length : 0) }
        : {}),
      ...(overallRate !== undefined ? { overallRate } : {}),
      requests: [{
        method: "POST",
        path: messagePath(integrationId),
        headers: headersFor(token),
        setupRequest: (req) => ({ ...req, body: messageBody(spec, next++) })
      }],
      onInstance: (instance) =>
        instance.on("response", (_client, statusCode, _bytes, responseTime) => {
          samples.push(responseTime)
          statuses[statusCode] = (statuses[statusCode] ?? 0) + 1
        })
    })
  ))
  const finished = nowMs()
  return {
    samples,
    statuses,
    errors: results.reduce((sum, r) => sum + r.errors, 0),
    timeouts: results.reduce((sum, r) => sum + r.timeouts, 0),
    non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
    startedAt: started,
    finishedAt: finished,
    elapsedMs: finished - started,
    firstIndex: startIndex,
    nextIndex: next
  }
}

/** One POST; resolves with its status and timings (never rejects). */
const post = (agent, base, path, token, body, { abortAfterMs, timeoutMs = 60_000, onSocket } = {}) =>
  new Promise((resolve) => {
    const url = new URL(path, base)
    const sentAt = nowMs()
    let settled = false
    const finish = (outcome) => {
      if (settled) return
      settled = true
      resolve({ sentAt, endAt: nowMs(), ...outcome })
    }
    const req = request(url, {
      method: "POST",
      agent,
      headers: { ...headersFor(token), "content-length": Buffer.byteLength(body) },
      timeout: timeoutMs
    }, (res) => {
      const chunks = []
      res.on("data", (chunk) => chunks.push(chunk))
      res.on("end", () => finish({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") }))
      res.on("error", (error) => finish({ status: null, error: error.message }))
    })
    req.on("timeout", () => {
      req.destroy(new Error("timeout"))
    })
    if (onSocket !== undefined) req.on("socket", onSocket)
    req.on("error", (error) => finish({ status: null, error: error.message }))
    req.end(body)
    if (abortAfterMs !== undefined) {
      setTimeout(() => {
        req.destroy(new Error("aborted by the client"))
        finish({ status: null, error: "aborted", aborted: true })
      }, abortAfterMs)
    }
  })

/**
 * Open-loop load: message i is due at start + i / rate. Each record: index, conversation, the scheduled
 * and actual send times, the status, and the latency from the scheduled time. `maxSockets` caps the
 * connections (a request finding them all busy waits in the client, and that wait counts).
 */
const runPaced = async ({ target, targets, token, integrationId, spec, rate, count, startIndex = 0, maxSockets = 256 }) => {
  const urls = targets ?? [target]
  const agent = new Agent({ keepAlive: true, maxSockets })
  const sockets = new Set()
  const onSocket = (socket) => sockets.add(socket)
  const start = nowMs() + 20
  const inFlight = []
  for (let n = 0; n < count; n++) {
    const scheduledAt = start + (n * 1000) / rate
    const wait = scheduledAt - nowMs()
    if (wait > 1) await sleep(wait)
    const i = startIndex + n
    const conversationId = conversationOf(spec, i)
    const body = messageBody(spec, i)
    inFlight.push(post(agent, urls[n % urls.length], messagePath(integrationId), token, body, { onSocket }).then((r) => ({
      index: i,
      conversationId,
      scheduledAt,
      sentAt: r.sentAt,
      endAt: r.endAt,
      status: r.status,
      error: r.error ?? null,
      latencyMs: r.endAt - scheduledAt
    })))
  }
  const records = await Promise.all(inFlight)
  agent.destroy()
  return { records, connections: sockets.size, nextIndex: startIndex + count }
}

/**
 * The stall a client abort causes: per round, `aborts` requests whose socket is destroyed after
 * `abortAfterMs`, then one normal request whose latency is the figure. A normal request before the
 * aborts gives the undisturbed latency of that round.
 */
const runAbortProbe = async ({ target, token, integrationId, spec, rounds, aborts, abortAfterMs, startIndex = 0 }) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 })
  const fresh = () => new Agent({ keepAlive: false })
  let i = startIndex
  const send = (options, useAgent = agent) =>
    post(useAgent, target, messagePath(integrationId), token, messageBody(spec, i++), options)
  const results = []
  for (let round = 0; round < rounds; round++) {
    const before = await send()
    const aborted = await Promise.all(Array.from({ length: aborts }, () => send({ abortAfterMs }, fresh())))
    const after = await send()
    results.push({
      beforeMs: before.endAt - before.sentAt,
      beforeStatus: before.status,
      abortedCompleted: aborted.filter((r) => !r.aborted).length,
      afterMs: after.endAt - after.sentAt,
      afterStatus: after.status
    })
    await sleep(200)
  }
  agent.destroy()
  return { rounds: results, nextIndex: i }
}

/** `count` requests one after the other; the latency of each, in order. */
const runSequential = async ({ target, token, integrationId, spec, count, startIndex = 0 }) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const latencies = []
  const statuses = {}
  for (let n = 0; n < count; n++) {
    const r = await post(agent, target, messagePath(integrationId), token, messageBody(spec, startIndex + n))
    latencies.push(r.endAt - r.sentAt)
    statuses[r.status ?? "error"] = (statuses[r.status ?? "error"] ?? 0) + 1
  }
  agent.destroy()
  return { latencies, statuses, nextIndex: startIndex + count }
}

/** Closed-loop GETs of one URL (the `floor` scenario's HTTP stack): `amount` requests on `connections`. */
const runGet = async ({ url, connections, amount }) => {
  const started = nowMs()
  const result = await runOne({ url, connections, pipelining: 1, amount, onInstance: () => {} })
  return { elapsedMs: nowMs() - started, ok: result["2xx"], non2xx: result.non2xx, errors: result.errors, p99Ms: result.latency.p99 }
}

serve({
  get: runGet,
  autocannon: runAutocannon,
  paced: runPaced,
  abortProbe: runAbortProbe,
  sequential: runSequential
})
