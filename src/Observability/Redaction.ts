/**
 * Nothing secret leaves in a span: the helpdesk endpoint's `access_token` query parameter (and any
 * other credential-looking parameter) is masked in URL attributes before spans are exported.
 * Authorization headers are already redacted by Effect's HTTP client and server spans.
 *
 * Nothing secret leaves in a log line either: records are written without tokens, secrets or message
 * text, and `redactSecrets` masks, in every line the JSON and logfmt loggers write, whatever still
 * looks like one (Parley's API and admin tokens and webhook secrets, bearer tokens, AI provider keys,
 * credential-looking URL parameters), should a cause or an error message carry it.
 *
 * The exporter also keeps the name Parley's statement spans have always had (`sql.execute`, which
 * docs/observability.md and docs/runbook.md use): Effect 4's SQL client names them after the database
 * (OpenTelemetry's database convention: `db.namespace`, e.g. `parley`), which says nothing the span's
 * `db.namespace` attribute does not.
 */
import type { ExportResult } from "@opentelemetry/core"
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base"

const SECRET_PARAMS = /([?&](?:access_token|token|api_key|apikey|secret|signature)=)[^&#\s"'\\]*/gi

const redactUrl = (value: string): string => value.replace(SECRET_PARAMS, "$1REDACTED")

/** Parley's tokens (`prl_`, `padm_`) and webhook secrets (`whsec_`), bearer tokens, OpenAI/Anthropic keys. */
const SECRET_VALUES = /\b(prl_|padm_|whsec_|Bearer\s+|sk-)[A-Za-z0-9+/=_-]{8,}/g

/** `text` with every credential-looking value replaced by `REDACTED`. */
export const redactSecrets = (text: string): string =>
  redactUrl(text).replace(SECRET_VALUES, "$1REDACTED")

/** A statement's span (Effect's SQL client marks each with `effect.sql.method`; a transaction's has none). */
const STATEMENT_SPAN = "sql.execute"
const isStatement = (span: ReadableSpan) => span.attributes["effect.sql.method"] !== undefined

/** The span as it is exported: credential-looking URL parameters masked, a statement named `sql.execute`. */
const forExport = (span: ReadableSpan): ReadableSpan => {
  let changed = false
  const attributes = { ...span.attributes }
  for (const [key, value] of Object.entries(attributes)) {
    if (typeof value === "string" && (key.startsWith("url.") || key === "http.url" || key === "http.target")) {
      const redacted = key === "url.query" ? redactUrl(`?${value}`).slice(1) : redactUrl(value)
      if (redacted !== value) {
        attributes[key] = redacted
        changed = true
      }
    }
  }
  const renamed = isStatement(span) && span.name !== STATEMENT_SPAN
  if (!changed && !renamed) return span
  // The span keeps its prototype (spanContext() and the rest); only its attributes and name are replaced.
  return Object.create(span, {
    ...(changed ? { attributes: { value: attributes, enumerable: true } } : {}),
    ...(renamed ? { name: { value: STATEMENT_SPAN, enumerable: true } } : {})
  })
}

export class RedactingSpanExporter implements SpanExporter {
  constructor(private readonly inner: SpanExporter) {}
  export(spans: Array<ReadableSpan>, resultCallback: (result: ExportResult) => void): void {
    this.inner.export(spans.map(forExport), resultCallback)
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown()
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve()
  }
}
