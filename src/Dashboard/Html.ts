/**
 * HTML as values: `html` is a tagged template whose interpolations are escaped unless they are `Html`
 * already (another `html` fragment, or `raw` for text Parley wrote itself). Arrays are joined, and
 * `null`, `undefined` and `false` render nothing, so that a page reads as its markup:
 * html`<ul>${items.map((item) => html`<li>${item.name}</li>`)}</ul>`.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

/** What a template may interpolate. */
export type Interpolated = Html | string | number | bigint | boolean | null | undefined | ReadonlyArray<Interpolated>

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }

/** Text safe in element content and in quoted attribute values. */
export const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c)

const render = (value: Interpolated): string => {
  if (value instanceof Html) return value.value
  if (value === null || value === undefined || value === false) return ""
  if (Array.isArray(value)) return value.map(render).join("")
  return escape(String(value))
}

export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<Interpolated>): Html => {
  let out = strings[0] ?? ""
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? "")
  return new Html(out)
}

/** Markup Parley wrote itself (never anything a user sent). */
export const raw = (markup: string): Html => new Html(markup)
