// The accounting of a chaos run, from what the receiver got and what the database holds (read through
// the schema only): lost replies, second replies, order inversions, acknowledged messages missing.

/** Everything the database says about the integration's conversations, messages and deliveries. */
const readDatabase = (pg, database, integrationId) => {
  const messages = pg.rows(database, `
    SELECT m.id, m.external_id AS "externalId", m.role, m.seq, m.reply_to AS "replyTo", m.sync_only AS "syncOnly",
           c.external_id AS "conversationId"
    FROM messages m JOIN conversations c ON c.id = m.conversation_id
    WHERE m.integration_id = '${integrationId}'`)
  const events = pg.rows(database, `
    SELECT e.id, e.kind, e.status, c.external_id AS "conversationId", j.seq, e.attempts
    FROM events e
    LEFT JOIN conversations c ON c.id = e.conversation_id
    -- The first delivery job of each event (a replay adds another, later one).
    LEFT JOIN (SELECT payload->>'eventId' AS event_id, min(seq) AS seq FROM jobs WHERE kind = 'deliver_event' GROUP BY 1) j
      ON j.event_id = e.id::text
    WHERE e.integration_id = '${integrationId}'`)
  const pendingReplies = Number(pg.query(database, `
    SELECT count(*) FROM jobs WHERE kind = 'generate_reply' AND status IN ('pending', 'running')`).trim())
  const escalated = pg.rows(database, `
    SELECT external_id AS "conversationId" FROM conversations
    WHERE integration_id = '${integrationId}' AND status = 'escalated'`).map((r) => r.conversationId)
  return { messages, events, pendingReplies, escalated }
}

/**
 * Figures of a run. `acked`: message id → {conversationId, syncOnly} of every acknowledged message.
 * A customer message is expected to be answered unless it is syncOnly or its conversation had been
 * handed over (an escalating reply before it).
 */
export const account = ({ pg, database, integrationId, deliveries, acked }) => {
  const db = readDatabase(pg, database, integrationId)
  const firstArrival = new Map()
  const redeliveries = { count: 0 }
  for (const delivery of deliveries) {
    if (firstArrival.has(delivery.eventId)) redeliveries.count++
    else firstArrival.set(delivery.eventId, delivery)
  }
  const delivered = [...firstArrival.values()]
  const deliveredReplyIds = new Set(delivered.flatMap((d) => d.replyIds))
  const escalateDeliveries = delivered.filter((d) => d.kind === "escalate")
  const escalatedConversations = new Set(db.escalated)

  const byConversation = new Map()
  for (const message of db.messages) {
    const list = byConversation.get(message.conversationId) ?? []
    list.push(message)
    byConversation.set(message.conversationId, list)
  }
  for (const list of byConversation.values()) list.sort((a, b) => Number(a.seq) - Number(b.seq))

  let lost = 0
  let missingInDatabase = 0
  let unexpectedReplies = 0
  const lostExamples = []
  const storedByExternalId = new Map(db.messages.filter((m) => m.externalId !== null).map((m) => [m.externalId, m]))
  for (const [messageId, info] of acked) {
    const stored = storedByExternalId.get(messageId)
    if (stored === undefined) {
      missingInDatabase++
      continue
    }
    const thread = byConversation.get(info.conversationId) ?? []
    const replies = thread.filter((m) => m.role === "ai" && Number(m.seq) > Number(stored.seq))
    if (info.syncOnly) {
      if (thread.some((m) => m.role === "ai")) unexpectedReplies++
      continue
    }
    // Handed over before this message: the AI rightly stays silent.
    const handedOverBefore = escalatedConversations.has(info.conversationId) &&
      thread.some((m) => m.role === "ai" && Number(m.seq) < Number(stored.seq))
    if (handedOverBefore) continue
    if (!replies.some((reply) => deliveredReplyIds.has(reply.id))) {
      lost++
      if (lostExamples.length < 5) lostExamples.push(messageId)
    }
  }

  // Second replies: one trigger answered by more than one reply message, or one conversation's single
  // message answered by more than one send_messages event.
  const triggerOf = new Map(db.messages.filter((m) => m.replyTo !== null).map((m) => [m.id, m.replyTo]))
  const repliesPerTrigger = new Map()
  for (const delivery of delivered) {
    for (const replyId of delivery.replyIds) {
      const trigger = triggerOf.get(replyId) ?? `unknown:${replyId}`
      const set = repliesPerTrigger.get(trigger) ?? new Set()
      set.add(replyId)
      repliesPerTrigger.set(trigger, set)
    }
  }
  let duplicated = [...repliesPerTrigger.values()].filter((set) => set.size > 1).length
  const sendEventsPerReply = new Map()
  for (const delivery of delivered.filter((d) => d.kind === "send_messages")) {
    for (const replyId of delivery.replyIds) sendEventsPerReply.set(replyId, (sendEventsPerReply.get(replyId) ?? 0) + 1)
  }
  duplicated += [...sendEventsPerReply.values()].filter((n) => n > 1).length

  // Order: per conversation, events must first arrive in the order they were created (the delivery
  // jobs' sequence), and their createdAt must not go backwards.
  const seqOf = new Map(db.events.map((e) => [e.id, e.seq === null ? null : Number(e.seq)]))
  const arrivals = new Map()
  for (const delivery of delivered) {
    const list = arrivals.get(delivery.conversationId) ?? []
    list.push(delivery)
    arrivals.set(delivery.conversationId, list)
  }
  let inversions = 0
  for (const list of arrivals.values()) {
    for (let i = 1; i < list.length; i++) {
      const previous = list[i - 1]
      const current = list[i]
      const a = seqOf.get(previous.eventId)
      const b = seqOf.get(current.eventId)
      if ((a != null && b != null && a > b) || Date.parse(previous.createdAt) > Date.parse(current.createdAt)) inversions++
    }
  }

  const unknownEvents = delivered.filter((d) => !seqOf.has(d.eventId)).length
  const undelivered = db.events.filter((e) => e.status !== "delivered").length
  const expected = [...acked.values()].filter((a) => !a.syncOnly).length
  return {
    lost,
    lostExamples,
    duplicated,
    inversions,
    missingInDatabase,
    unexpectedReplies,
    redeliveries: redeliveries.count,
    delivered: delivered.length,
    events: db.events.length,
    undelivered,
    unknownEvents,
    pendingReplies: db.pendingReplies,
    expected,
    escalations: escalateDeliveries.length
  }
}
