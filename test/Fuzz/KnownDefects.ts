/**
 * Defects that are fixed outside these tests' branch. A test (or fuzz property) that shows
 * one runs as `it.fails` while its switch is `true`, so the suite stays green and still proves the
 * defect is there; when the fix lands, flip the switch to `false` and the same test must pass.
 */
export const knownDefects = {
  /** (1) Deeply nested JSON (~8,000 `[`) overflows JSON.parse's recursion: 500 instead of 422. */
  nestedJson: false,
  /** (2) Lone surrogates (`"\ud800"`) reach PostgreSQL: 500 from jsonb, or silently U+FFFD in text. */
  loneSurrogates: false,
  /** (6) `webhookUrlProblem` is not yet called by Integrations create/updateSettings in production. */
  productionWebhookUrl: false,
  /** (8) A chunked body over the limit gets the connection closed with no answer instead of 413. */
  chunkedBodyLimit: false,
  /** (9) Node's own 431 / 400 answers have empty bodies instead of `{"detail": ...}`. */
  nodeOwnErrors: false
} as const

export type KnownDefect = keyof typeof knownDefects
