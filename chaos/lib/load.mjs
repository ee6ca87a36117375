// The integrator's side of the load: conversations of customer messages sent to message-received, each
// retried with the same message id until Parley acknowledges it (200), as a careful integrator would.
import { randomUUID } from "node:crypto"
import { sleep } from "./parley.mjs"

/** Questions the knowledge base answers, and ones it cannot (the AI then hands over: send_messages + escalate). */
const answerable = [
  "How long does shipping take?",
  "When will my order ship?",
  "How do I return an item for a refund?",
  "How long does express shipping take?"
]
const unanswerable = ["Can I pay with bitcoin?", "Do you sell gift cards for horses?", "Is the CEO married?"]

/**
 * The conversations of a run. Most have one message (half answerable, half escalating); some have two
 * answerable messages close together (the debounce may answer them together); some are syncOnly history.
 */
export const planConversations = (prefix, count) =>
  Array.from({ length: count }, (_, i) => {
    const kind = i % 10 === 9 ? "sync" : i % 5 === 3 ? "double" : i % 2 === 0 ? "answerable" : "escalating"
    const customerId = randomUUID()
    const question = (list, n) => list[n % list.length]
    const base = { id: `${prefix}-c${i}`, customerId, kind }
    const message = (n, text, syncOnly = false) => ({ id: `${prefix}-c${i}-m${n}`, text, syncOnly })
    switch (kind) {
      case "sync":
        return { ...base, messages: [message(1, "Old history line", true)] }
      case "double":
        return { ...base, messages: [message(1, question(answerable, i)), message(2, question(answerable, i + 1))] }
      case "escalating":
        return { ...base, messages: [message(1, question(unanswerable, i))] }
      default:
        return { ...base, messages: [message(1, question(answerable, i))] }
    }
  })

export const makeStats = () => ({
  tried: 0,
  acknowledged: 0,
  statuses: new Map(),
  networkErrors: 0,
  timeouts: 0,
  fiveHundreds: 0,
  gaveUp: 0,
  latencies: [],
  /** Request latencies by answer status: how fast a 503 comes during an outage. */
  latenciesByStatus: new Map(),
  acked: new Map()
})

const bump = (map, key) => map.set(key, (map.get(key) ?? 0) + 1)

/**
 * Sends every conversation's messages (a conversation's messages in order, each after the previous
 * was acknowledged), `concurrency` conversations at a time, to whichever instance `targets()` names.
 */
export const runLoad = async ({ conversations, concurrency, targets, token, integrationId, stats, deadlineMs, requestTimeoutMs = 10_000, durationMs = 0 }) => {
  let next = 0
  // Conversations start evenly over `durationMs`, so the chaos lands while messages are in flight.
  const spacing = conversations.length > 0 ? durationMs / conversations.length : 0
  const t0 = Date.now()
  let turn = 0
  const deadline = Date.now() + deadlineMs
  const send = async (conversation, message) => {
    const body = JSON.stringify({
      id: message.id,
      role: "human",
      customerId: conversation.customerId,
      conversationId: conversation.id,
      text: message.text,
      syncOnly: message.syncOnly
    })
    while (Date.now() < deadline) {
      const list = targets()
      const base = list[turn++ % list.length]
      stats.tried++
      const started = Date.now()
      try {
        const response = await fetch(`${base}/v1/webhooks/${integrationId}/message-received`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body,
          signal: AbortSignal.timeout(requestTimeoutMs)
        })
        await response.text()
        stats.latencies.push(Date.now() - started)
        bump(stats.statuses, response.status)
        stats.latenciesByStatus.set(response.status, [...(stats.latenciesByStatus.get(response.status) ?? []), Date.now() - started])
        if (response.status >= 500) stats.fiveHundreds++
        if (response.status === 200) {
          stats.acknowledged++
          stats.acked.set(message.id, { conversationId: conversation.id, syncOnly: message.syncOnly, at: Date.now() })
          return true
        }
        if (response.status < 500 && response.status !== 429) {
          throw new Error(`message ${message.id} refused with ${response.status}`)
        }
      } catch (error) {
        if (error instanceof Error && error.message.startsWith("message ")) throw error
        if (error?.name === "TimeoutError") stats.timeouts++
        else stats.networkErrors++
      }
      await sleep(200)
    }
    stats.gaveUp++
    return false
  }
  const worker = async () => {
    while (next < conversations.length) {
      const index = next++
      const conversation = conversations[index]
      const wait = t0 + index * spacing - Date.now()
      if (wait > 0) await sleep(wait)
      for (const [index, message] of conversation.messages.entries()) {
        if (index > 0) await sleep(Math.floor(Math.random() * 400))
        if (!(await send(conversation, message))) break
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

/**
 * Replays an already delivered event (an HTTP request enqueues its delivery job) and waits for it at the
 * receiver: ms from the request to the arrival. Idle workers woken by LISTEN/NOTIFY take it at once;
 * without LISTEN it waits for their next poll (JOB_POLL_INTERVAL).
 */
export const probeReplay = async ({ base, token, integrationId, receiver, eventId, timeoutMs = 30_000 }) => {
  const before = receiver.deliveries().filter((d) => d.eventId === eventId).length
  const started = Date.now()
  const response = await fetch(`${base}/v1/integration/${integrationId}/deliveries/${eventId}/replay`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(10_000)
  })
  await response.text()
  if (response.status !== 200) return null
  while (Date.now() - started < timeoutMs) {
    const arrivals = receiver.deliveries().filter((d) => d.eventId === eventId)
    if (arrivals.length > before) return arrivals[arrivals.length - 1].at - started
    await sleep(5)
  }
  return null
}

/**
 * Sends one answerable message in a new conversation and waits for its reply at the receiver: ms from
 * the event's creation (its `createdAt`) to the arrival.
 */
export const probeDelivery = async ({ base, token, integrationId, receiver, id, timeoutMs = 30_000 }) => {
  const conversationId = `probe-${id}`
  const response = await fetch(`${base}/v1/webhooks/${integrationId}/message-received`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ id: `${conversationId}-m1`, role: "human", customerId: randomUUID(), conversationId, text: answerable[0] }),
    signal: AbortSignal.timeout(10_000)
  })
  await response.text()
  if (response.status !== 200) return null
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const delivery = receiver.deliveries().find((d) => d.conversationId === conversationId && d.kind === "send_messages")
    if (delivery !== undefined) return delivery.at - Date.parse(delivery.createdAt)
    await sleep(10)
  }
  return null
}
