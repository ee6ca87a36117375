// The message-received bodies every load generator sends. A spec describes a stream of messages; message
// i of a stream is always the same body (apart from sentAt), so Parley and the baseline get the same work.

/**
 * @typedef {object} MessageSpec
 * @property {string} prefix        unique per stream: message ids are `<prefix>-m<i>`
 * @property {boolean} syncOnly
 * @property {number} [conversations]  message i goes to conversation i % conversations; unset: one
 *                                     conversation per message
 * @property {string} [conversationId] every message into this one conversation
 * @property {string} [conversationPrefix] conversation ids are `<conversationPrefix>-c<n>` (default: prefix)
 * @property {string} text
 * @property {boolean} [sentAt]     send the time of sending as `sentAt`
 * @property {string[]} [roles]     message i has role roles[i % roles.length] (default: all "human")
 */

/** A customer UUID made of decimal digits: stable, valid, and easy to produce in pgbench too. */
export const customerUuid = (n) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`

export const conversationOf = (spec, i) =>
  spec.conversationId ??
    `${spec.conversationPrefix ?? spec.prefix}-c${spec.conversations === undefined ? i : i % spec.conversations}`

/** The body of message i of the stream. */
export const messageBody = (spec, i) => {
  const conversationId = conversationOf(spec, i)
  const conversationIndex = spec.conversations === undefined ? i : i % spec.conversations
  return JSON.stringify({
    id: `${spec.prefix}-m${i}`,
    role: spec.roles === undefined ? "human" : spec.roles[i % spec.roles.length],
    customerId: customerUuid(spec.conversationId === undefined ? conversationIndex : 0),
    conversationId,
    text: spec.text,
    syncOnly: spec.syncOnly,
    ...(spec.sentAt === true ? { sentAt: new Date().toISOString() } : {})
  })
}

export const messagePath = (integrationId) => `/v1/webhooks/${integrationId}/message-received`

/** A question the benchmark's knowledge-base article answers (see `benchArticle`). */
export const QUESTION = "How long does shipping take to Canada?"

export const benchArticle = {
  title: "Shipping times",
  body: [
    "# Shipping times",
    "",
    "Orders ship within one business day. Shipping to Canada takes three to five business days;",
    "shipping within the United States takes two to four business days. Express shipping takes one day.",
    "",
    "## Tracking",
    "",
    "Every order gets a tracking link by email as soon as it ships."
  ].join("\n"),
  url: "https://help.example.com/shipping"
}
