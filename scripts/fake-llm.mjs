// A tiny stand-in for an OpenAI-compatible model server (`POST /v1/chat/completions`), for trying
// Parley's model path by hand without a key or a GPU. It plays a careful support agent: it first calls
// `search_knowledge` with the customer's words, then answers with the best passage it got back, citing
// it as [1]; with no passage it calls `escalate_to_human` (when offered). Calls without tools (the
// conversation title and summary) get the customer's first words, the inactivity check-in and goodbye a
// fitting sentence; the verifier's check gets a verdict
// (supported, and resolved when the customer thanked), the guardrail classifier's a verdict (unsafe
// when the message says "ignore"). A request with "stream": true is answered as server-sent chunks, a
// few words each, FAKE_LLM_CHUNK_MS (150) apart, so streaming can be watched. Every request is printed.
//
//   node scripts/fake-llm.mjs [port=11435]
//   AI_PROVIDER=openai AI_MODEL=fake OPENAI_BASE_URL=http://127.0.0.1:11435/v1 npm start
import { createServer } from "node:http"

const port = Number(process.argv[2] ?? 11435)
let sequence = 0

const completion = (model, message, usage) => ({
  id: `chatcmpl-fake-${++sequence}`,
  object: "chat.completion",
  created: Math.floor(Date.now() / 1000),
  model,
  choices: [{ index: 0, message: { role: "assistant", refusal: null, ...message }, logprobs: null, finish_reason: message.tool_calls ? "tool_calls" : "stop" }],
  usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output }
})

const toolCall = (name, args) => ({
  content: null,
  tool_calls: [{ id: `call_${++sequence}`, type: "function", function: { name, arguments: JSON.stringify(args) } }]
})

const textOf = (message) =>
  typeof message.content === "string" ? message.content : (message.content ?? []).map((part) => part.text ?? "").join("")

const reply = (body) => {
  const messages = body.messages ?? []
  const input = messages.reduce((n, m) => n + Math.ceil(textOf(m).length / 4), 0)
  const system = messages.filter((m) => m.role === "system").map(textOf).join("\n")
  if (system.startsWith("You check a customer-support assistant's draft")) {
    const said = textOf(messages.at(-1) ?? {})
    const customer = said.split("## The customer's latest messages")[1]?.split("## The draft reply")[0] ?? ""
    const resolved = /thank|gracias|merci|danke|obrigad/i.test(customer) && !customer.includes("?")
    return { message: { content: JSON.stringify({ supported: true, unsupportedClaims: [], resolved }) }, usage: { input: 200, output: 20 } }
  }
  if (system.includes("has not answered our last message")) {
    return { message: { content: "Are you still there? Reply here if you still need help with your question." }, usage: { input, output: 16 } }
  }
  if (system.includes("so we are closing the conversation")) {
    return { message: { content: "I'm closing this conversation for now since I haven't heard back. Write again any time!" }, usage: { input, output: 18 } }
  }
  if (system.startsWith("You screen a customer's message")) {
    const unsafe = /ignore/i.test(textOf(messages.at(-1) ?? {}))
    const verdict = unsafe ? { verdict: "prompt_injection", reason: "asks to ignore instructions" } : { verdict: "safe", reason: "a support question" }
    return { message: { content: JSON.stringify(verdict) }, usage: { input: 120, output: 12 } }
  }
  const tools = new Set((body.tools ?? []).map((tool) => tool.function?.name))
  const userTexts = messages.filter((m) => m.role === "user").map(textOf)
  const last = messages.at(-1)
  if (tools.size === 0) {
    // A title or a summary (of a transcript whose lines start with "Customer: "): the customer's own words.
    const said = (userTexts[0] ?? "").split("\n").find((line) => line.startsWith("Customer: "))?.slice(10)
    const words = (said ?? "Conversation").split(/\s+/).slice(0, 8).join(" ")
    return { message: { content: words }, usage: { input, output: 8 } }
  }
  if (last?.role === "tool") {
    let passages = []
    try {
      passages = JSON.parse(textOf(last)).passages ?? []
    } catch {
      passages = []
    }
    if (passages.length > 0) {
      const best = passages[0]
      return { message: { content: `${best.text.split(/(?<=\.)\s/)[0]} [${best.ref}]` }, usage: { input, output: 30 } }
    }
    if (tools.has("escalate_to_human")) {
      return {
        message: toolCall("escalate_to_human", {
          reason: "Our articles do not answer the question.",
          summary: `The customer asked: ${userTexts.at(-1) ?? ""}`,
          message: "I couldn't find that in our help center; a colleague will take over."
        }),
        usage: { input, output: 25 }
      }
    }
    return { message: { content: "I'm sorry, I don't know." }, usage: { input, output: 8 } }
  }
  return { message: toolCall("search_knowledge", { query: userTexts.at(-1) ?? "" }), usage: { input, output: 12 } }
}

const chunkMs = Number(process.env.FAKE_LLM_CHUNK_MS ?? 150)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** The answer as chat.completion.chunk server-sent events: the text a few words per chunk. */
const stream = async (res, model, message, usage) => {
  const id = `chatcmpl-fake-${++sequence}`
  const chunk = (delta, finish = null) => ({
    id, object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }]
  })
  const send = (data) => res.write(`data: ${JSON.stringify(data)}\n\n`)
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  send(chunk({ role: "assistant", content: "" }))
  if (typeof message.content === "string") {
    for (const piece of message.content.match(/\S+(\s+\S+){0,2}\s*/g) ?? []) {
      await sleep(chunkMs)
      send(chunk({ content: piece }))
    }
  }
  for (const [index, call] of (message.tool_calls ?? []).entries()) send(chunk({ tool_calls: [{ index, ...call }] }))
  send(chunk({}, message.tool_calls ? "tool_calls" : "stop"))
  send({ id, object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model, choices: [],
    usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output } })
  res.end("data: [DONE]\n\n")
}

createServer((req, res) => {
  let raw = ""
  req.on("data", (chunk) => (raw += chunk))
  req.on("end", () => {
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "not found" } }))
      return
    }
    const body = JSON.parse(raw)
    const { message, usage } = reply(body)
    const tools = (body.tools ?? []).map((tool) => tool.function?.name).join(",")
    console.log(`${new Date().toISOString()} ${body.model}${body.stream ? " (stream)" : ""} messages=${body.messages?.length} tools=[${tools}] → ${message.tool_calls ? `call ${message.tool_calls[0].function.name}(${message.tool_calls[0].function.arguments})` : JSON.stringify(message.content)}`)
    if (body.stream === true) {
      stream(res, body.model, message, usage)
      return
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(completion(body.model, message, usage)))
  })
}).listen(port, "127.0.0.1", () => console.log(`fake chat-completions model on http://127.0.0.1:${port}/v1`))
