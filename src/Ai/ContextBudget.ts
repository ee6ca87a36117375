/**
 * The conversation a model reads, within its context budget (docs/ai.md, "Context budget"). Pure.
 *
 * - Tokens are estimated without a tokenizer: a quarter of the text's UTF-8 bytes plus a few per message
 *   (what BPE tokenizers average on English and European text; more for scripts with multi-byte letters,
 *   which the byte count already weighs). It is an estimate: the budget leaves room for its error.
 * - The budget is `AI_CONTEXT_TOKENS` when set, otherwise the model family's (`contextBudgetFor`): a
 *   share of its context window that leaves the rest to the system prompt, passages, tool results and
 *   the answer.
 * - The newest turns are kept whole, newest first, while they fit; a single message longer than a
 *   quarter of the budget is cut, with a marker saying how much was left out; what falls out (the
 *   oldest) is summarised once per conversation and the summary refreshed as the conversation grows
 *   (`ModelReplies`); a context-length error from the provider shrinks the budget by half, once.
 */
import type { HistoryMessage } from "./Llm/Contract.js"

/** Tokens a message costs besides its text (role, separators). */
const PER_MESSAGE = 4

export const estimateTokens = (text: string): number => Math.ceil(Buffer.byteLength(text, "utf8") / 4)

/** A message's estimated cost in a request. */
export const messageTokens = (text: string): number => estimateTokens(text) + PER_MESSAGE

/**
 * The history budget of a model family when `AI_CONTEXT_TOKENS` is not set: about half of its context
 * window, capped so that a reply stays fast and cheap. Unknown models get a small window's share.
 */
export const contextBudgetFor = (model: string): number => {
  const name = model.toLowerCase()
  if (/gpt-4\.1|gpt-5|gpt-4o|o1|o3|o4|claude|gemini/.test(name)) return 32_000
  if (/gpt-4-turbo|gpt-3\.5-turbo-16k|mistral-large|qwen2\.5|llama-?3\.[123]|llama3\.[123]/.test(name)) return 12_000
  if (/llama|mistral|phi|gemma|qwen/.test(name)) return 3_000
  return 8_000
}

/** `text` cut to about `maxTokens`, with a marker saying how many characters were left out. */
export const cutMessage = (text: string, maxTokens: number): string => {
  if (estimateTokens(text) <= maxTokens) return text
  // Bytes per character vary: cut by characters, then trim until the estimate fits.
  let keep = Math.max(0, maxTokens * 4 - 60)
  while (keep > 0 && estimateTokens(text.slice(0, keep)) > maxTokens - 15) keep = Math.floor(keep * 0.9)
  const left = [...text.slice(keep)].length
  return `${text.slice(0, keep).trimEnd()}\n[… message cut: ${left} more characters not shown]`
}

export interface Fitted {
  /** The newest messages that fit, oldest first, each cut to its share when it had to be. */
  readonly kept: ReadonlyArray<HistoryMessage>
  /** The older messages that did not fit, oldest first: to be summarised. */
  readonly dropped: ReadonlyArray<HistoryMessage>
  /** How many kept messages were cut. */
  readonly cut: number
  /** The kept messages' estimated tokens. */
  readonly tokens: number
}

/**
 * The newest messages of `history` that fit in `budget` tokens, kept whole unless one alone is over a
 * quarter of the budget (then cut); the rest dropped.
 */
export const fitHistory = (history: ReadonlyArray<HistoryMessage>, budget: number): Fitted => {
  const maxMessage = Math.max(50, Math.floor(budget / 4))
  const kept: Array<HistoryMessage> = []
  let tokens = 0
  let cut = 0
  let i = history.length - 1
  for (; i >= 0; i--) {
    const message = history[i]!
    const text = cutMessage(message.text, maxMessage)
    const cost = messageTokens(text)
    if (tokens + cost > budget) break
    if (text !== message.text) cut += 1
    kept.unshift(text === message.text ? message : { ...message, text })
    tokens += cost
  }
  return { kept, dropped: history.slice(0, i + 1), cut, tokens }
}

/**
 * Whether a provider's refusal says the request was too long for the model's context window (OpenAI's
 * `context_length_exceeded`, "maximum context length"; Anthropic's "prompt is too long"; vLLM, Ollama
 * and llama.cpp wordings).
 */
export const isContextLengthError = (reason: string): boolean =>
  /context[_ ]length|maximum context|context window|context size|too many tokens|prompt is too long|reduce the length|exceeds the (?:model's )?(?:maximum|context)/i
    .test(reason)
