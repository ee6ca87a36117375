/**
 * A workspace's AI (`/dashboard/w/:workspaceId/ai`), in three tabs:
 * - Model and instructions (`/ai`): the model that answers the workspace (never its key) and the
 *   standing instructions in force for the workspace and each integration, with a form to set them.
 * - Knowledge base (`/ai/knowledge`): the articles, adding, editing (`/ai/knowledge/:articleId`) and
 *   removing them, and a search that runs exactly as the AI's (`?q=`).
 * - Report (`/ai/report?days=`): per integration and UTC day, what the AI did and what it cost.
 * Forms validate as the admin API does (the same schemas), and answer 422 with each problem next to
 * its field, nothing stored.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { Admin } from "../Admin/Admin.js"
import { type ArticleInput, type Hit, Knowledge } from "../Ai/Knowledge.js"
import type { ArticleSummary } from "../Ai/KnowledgeRepo.js"
import { MAX_SEARCH_RESULTS } from "../Ai/Llm/Agent.js"
import { PREEMPTIVE_PASSAGES } from "../Ai/ModelReplies.js"
import type { AiSettingsView } from "../Domain/AiSettings.js"
import { decodeInput, type InvalidInput } from "../Domain/Errors.js"
import { ArticleId, type IntegrationId } from "../Domain/Ids.js"
import { type Instructions, MAX_INSTRUCTIONS_CHARS, NewInstructions } from "../Domain/Instructions.js"
import type { Integration } from "../Domain/Integration.js"
import { type Article, NewArticle } from "../Domain/Knowledge.js"
import {
  averageOf,
  DEFAULT_REPORT_DAYS,
  MAX_REPORT_DAYS,
  type ModelUse,
  readReport,
  type Report,
  ReportDays,
  type ReportLine
} from "./AiReport.js"
import { doneNotice, externalLink, fieldError, invalidIf, options, time, workspacePage, workspacePath } from "./Components.js"
import { DashboardSettings } from "./Settings.js"
import { type Html, html } from "./Html.js"
import {
  csrfField,
  type DashboardRoute,
  type DashboardServices,
  field,
  param,
  seeOther,
  type WorkspaceRequest,
  workspaceRoute
} from "./Page.js"

// -------------------------------------------------------------------------------------------------
// Shared pieces
// -------------------------------------------------------------------------------------------------

type AiTab = "model" | "knowledge" | "report"

const aiPath = (request: WorkspaceRequest, rest = "") => workspacePath(request, `/ai${rest}`)
const articlePath = (request: WorkspaceRequest, articleId: string, rest = "") =>
  aiPath(request, `/knowledge/${articleId}${rest}`)

const TABS: ReadonlyArray<readonly [AiTab, string, string]> = [
  ["model", "Model and instructions", ""],
  ["knowledge", "Knowledge base", "/knowledge"],
  ["report", "Report", "/report"]
]

/** A page of the AI section: its heading, its tabs and `body`. */
const aiPage = (
  request: WorkspaceRequest,
  page: { readonly tab: AiTab; readonly title: string; readonly body: Html; readonly status?: number }
) =>
  workspacePage(request, {
    title: `AI · ${page.title}`,
    section: "ai",
    status: page.status ?? 200,
    body: html`
<h1>AI</h1>
<nav class="tabs" aria-label="AI">
  ${
      TABS.map(([tab, label, rest]) =>
        html`<a href="${aiPath(request, rest)}"${tab === page.tab ? html` aria-current="page"` : ""}>${label}</a>`
      )
    }
</nav>
${page.body}`
  })

/** What each `?done=` after a form says (never text from the URL itself). */
const DONE: Readonly<Record<string, string>> = {
  instructions: "Instructions saved: the next replies follow them.",
  added: "Article added: the AI finds it from now on.",
  updated: "Article saved: the AI finds the new text from now on.",
  removed: "Article removed: the AI no longer finds it."
}

/** A problem of a form's field, by the field's name. */
type FieldErrors = Readonly<Record<string, string | undefined>>

/** The problems of an input as the admin API reports them, by field (`loc` after `body`). */
const fieldErrorsOf = (error: InvalidInput, fieldOf: (name: string) => string = (name) => name): FieldErrors => {
  const errors: Record<string, string> = {}
  for (const problem of error.problems) {
    const name = fieldOf(String(problem.path[0] ?? ""))
    errors[name] ??= problem.message
  }
  return errors
}

/** A textarea's text as typed: browsers send line breaks as CRLF, which would count twice against a limit. */
const textAreaField = (request: WorkspaceRequest, name: string) => (field(request, name) ?? "").replace(/\r\n?/g, "\n")

/** Text with its line breaks kept. */
const multiline = (text: string): Html => html`${text.split("\n").map((line, i) => i === 0 ? line : html`<br>${line}`)}`

const count = (n: number) => n.toLocaleString("en-US")

// -------------------------------------------------------------------------------------------------
// Model and standing instructions
// -------------------------------------------------------------------------------------------------

const keyStatus = (settings: AiSettingsView): string => {
  if (!settings.apiKeySet) return "None"
  const set = settings.apiKeyHint === null ? "Set" : `Set, ending in ${settings.apiKeyHint}`
  if (settings.source === "global") return `${set} (in this Parley's environment)`
  return settings.apiKeyEncryptedAtRest
    ? `${set}, encrypted at rest`
    : `${set}, not encrypted at rest (set PARLEY_ENCRYPTION_KEY and run parley secrets reencrypt)`
}

const modelSection = (request: WorkspaceRequest, settings: AiSettingsView): Html => html`
<section class="panel" aria-labelledby="model-heading">
  <h2 id="model-heading">Model</h2>
  <p>${
  settings.source === "workspace"
    ? html`The workspace's own settings, updated ${time(settings.updatedAt)}.`
    : html`The global default of this Parley (<code>AI_PROVIDER</code>, <code>AI_MODEL</code>…): the workspace has no settings of its own.`
}</p>
  <dl class="facts">
    <dt>Provider</dt>
    <dd>${settings.provider === "embedded" ? "embedded: the offline knowledge-base responder (no model, no key)" : settings.provider}</dd>
    ${
  settings.provider === "embedded" ? "" : html`
    <dt>Model</dt><dd>${settings.model ?? "—"}</dd>
    <dt>Base URL</dt><dd>${settings.baseUrl === null ? "The vendor's" : html`<code>${settings.baseUrl}</code>`}</dd>
    ${settings.openAiApi === null ? "" : html`<dt>API</dt><dd>${settings.openAiApi}</dd>`}
    <dt>API key</dt><dd>${keyStatus(settings)}</dd>`
}
  </dl>
  <p class="hint">The operator changes them with <code>parley ai set ${request.workspace.id} …</code> or
    <code>PUT /admin/v1/workspaces/${request.workspace.id}/ai</code>; the key is never shown again.</p>
</section>`

/** The instructions form: its scope (`workspace` or an integration's id), text and problems. */
interface InstructionsForm {
  readonly scope: string
  readonly text: string
  readonly errors: FieldErrors
}

const WORKSPACE_SCOPE = "workspace"

/** The versions of one scope, newest first (the first is in force). */
const versionsOf = (versions: ReadonlyArray<Instructions>, integrationId: IntegrationId | null) =>
  versions.filter((version) => version.integrationId === integrationId)

const scopeBlock = (
  request: WorkspaceRequest,
  heading: string,
  scope: string,
  versions: ReadonlyArray<Instructions>
): Html => {
  const [current, ...earlier] = versions
  const inForce = current === undefined || current.text === ""
    ? html`<p>None${current === undefined ? "" : html` (cleared ${time(current.createdAt)})`}.</p>`
    : html`<blockquote>${multiline(current.text)}</blockquote><p class="hint">Since ${time(current.createdAt)}.</p>`
  return html`
<h3>${heading}</h3>
${inForce}
<p><a href="${aiPath(request, `?scope=${scope}#instructions-form`)}">Change<span class="visually-hidden">: ${heading}</span></a></p>
${
    earlier.length === 0 ? "" : html`
<details>
  <summary>Earlier versions (${earlier.length})</summary>
  <ol>${
      earlier.map((version) =>
        html`<li>${time(version.createdAt)}: ${version.text === "" ? html`<em>cleared</em>` : multiline(version.text)}</li>`
      )
    }</ol>
</details>`
  }`
}

const instructionsSection = (
  request: WorkspaceRequest,
  integrations: ReadonlyArray<Integration>,
  versions: ReadonlyArray<Instructions>,
  form: InstructionsForm
): Html => {
  const scopes: ReadonlyArray<readonly [string, string]> = [
    [WORKSPACE_SCOPE, "The workspace (every integration)"],
    ...integrations.map((integration) => [integration.integrationId, `Integration ${integration.settings.name}`] as const)
  ]
  return html`
<section class="panel" aria-labelledby="instructions-heading">
  <h2 id="instructions-heading">Standing instructions</h2>
  <p>Rules every reply follows: the workspace's first, then the integration's. Each change is a new version;
    the newest of each scope is in force.</p>
  ${scopeBlock(request, "The workspace (every integration)", WORKSPACE_SCOPE, versionsOf(versions, null))}
  ${
    integrations.map((integration) =>
      scopeBlock(
        request,
        `Integration ${integration.settings.name}`,
        integration.integrationId,
        versionsOf(versions, integration.integrationId)
      )
    )
  }
  <h3>Set instructions</h3>
  <form id="instructions-form" method="post" action="${aiPath(request, "/instructions")}">
    ${csrfField(request.session)}
    <label for="instructions-scope">For</label>
    <select id="instructions-scope" name="scope"${invalidIf("instructions-scope", form.errors["scope"])}>
      ${options(scopes, form.scope)}
    </select>
    ${fieldError("instructions-scope", form.errors["scope"])}
    <label for="instructions-text">Instructions
      <span class="hint">At most ${count(MAX_INSTRUCTIONS_CHARS)} characters. Empty clears the scope's instructions.</span></label>
    <textarea id="instructions-text" name="text" maxlength="${MAX_INSTRUCTIONS_CHARS}"${
    invalidIf("instructions-text", form.errors["text"])
  }>${form.text}</textarea>
    ${fieldError("instructions-text", form.errors["text"])}
    <p><button type="submit">Save instructions</button></p>
  </form>
</section>`
}

/** The form as a link opened it (`?scope=`): that scope, its text in force to start from. */
const instructionsFormOf = (
  request: WorkspaceRequest,
  integrations: ReadonlyArray<Integration>,
  versions: ReadonlyArray<Instructions>
): InstructionsForm => {
  const asked = request.url.searchParams.get("scope") ?? WORKSPACE_SCOPE
  const integration = integrations.find((candidate) => candidate.integrationId === asked)
  const scope = integration === undefined ? WORKSPACE_SCOPE : integration.integrationId
  const current = versionsOf(versions, integration === undefined ? null : integration.integrationId)[0]
  return { scope, text: current?.text ?? "", errors: {} }
}

const modelPage = (request: WorkspaceRequest, form: Option.Option<InstructionsForm>, status = 200) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    const settings = yield* admin.getAiSettings(request.workspace.id)
    const integrations = yield* admin.listIntegrations(request.workspace.id)
    const versions = yield* admin.listInstructions(request.workspace.id)
    const shown = Option.getOrElse(form, () => instructionsFormOf(request, integrations, versions))
    return aiPage(request, {
      tab: "model",
      title: "Model and instructions",
      status,
      body: html`${doneNotice(request, DONE)}${modelSection(request, settings)}${
        instructionsSection(request, integrations, versions, shown)
      }`
    })
  })

const modelRoute = workspaceRoute("GET", "/dashboard/w/:workspaceId/ai", (request) => modelPage(request, Option.none()))

const setInstructionsRoute = workspaceRoute("POST", "/dashboard/w/:workspaceId/ai/instructions", (request) =>
  Effect.gen(function*() {
    const admin = yield* Admin
    const scope = field(request, "scope") ?? WORKSPACE_SCOPE
    const text = textAreaField(request, "text")
    const invalid = (errors: FieldErrors) => modelPage(request, Option.some({ scope, text, errors }), 422)
    const decoded = yield* Effect.result(
      decodeInput(NewInstructions)({ text, integrationId: scope === WORKSPACE_SCOPE ? null : scope })
    )
    if (Result.isFailure(decoded)) {
      return yield* invalid(fieldErrorsOf(decoded.failure, (name) => name === "integrationId" ? "scope" : name))
    }
    const integrationId = decoded.success.integrationId ?? null
    const integrations = yield* admin.listIntegrations(request.workspace.id)
    if (integrationId !== null && !integrations.some((integration) => integration.integrationId === integrationId)) {
      return yield* invalid({ scope: "Choose the workspace or one of its integrations" })
    }
    yield* admin.setInstructions(request.workspace.id, decoded.success)
    return seeOther(aiPath(request, "?done=instructions"))
  }))

// -------------------------------------------------------------------------------------------------
// Knowledge base
// -------------------------------------------------------------------------------------------------

/** An article form's fields as typed, and their problems. */
interface ArticleForm {
  readonly title: string
  readonly url: string
  readonly body: string
  readonly errors: FieldErrors
}

const emptyArticleForm: ArticleForm = { title: "", url: "", body: "", errors: {} }

const formOfArticle = (article: Article): ArticleForm => ({
  title: article.title,
  url: article.url ?? "",
  body: article.body,
  errors: {}
})

/** The posted article, decoded by the admin API's schema; or the form with its problems. */
const readArticleForm = (request: WorkspaceRequest) =>
  Effect.gen(function*() {
    const form = { title: field(request, "title") ?? "", url: field(request, "url") ?? "", body: textAreaField(request, "body") }
    const input = { title: form.title, body: form.body, ...(form.url === "" ? {} : { url: form.url }) }
    const decoded = yield* Effect.result(decodeInput(NewArticle)(input))
    return Result.isSuccess(decoded)
      ? Result.succeed<ArticleInput>(decoded.success)
      : Result.fail<ArticleForm>({ ...form, errors: fieldErrorsOf(decoded.failure) })
  })

/** The title, URL and body inputs (ids prefixed with `prefix`, one form per page section). */
const articleFields = (prefix: string, form: ArticleForm): Html => html`
<label for="${prefix}-title">Title</label>
<input id="${prefix}-title" name="title" type="text" required maxlength="500" value="${form.title}"${
  invalidIf(`${prefix}-title`, form.errors["title"])
}>
${fieldError(`${prefix}-title`, form.errors["title"])}
<label for="${prefix}-url">Link <span class="hint">Optional: where customers read the article (http or https)</span></label>
<input id="${prefix}-url" name="url" type="url" value="${form.url}"${invalidIf(`${prefix}-url`, form.errors["url"])}>
${fieldError(`${prefix}-url`, form.errors["url"])}
<label for="${prefix}-body">Text <span class="hint">Markdown; each <code>## heading</code> starts a passage</span></label>
<textarea id="${prefix}-body" name="body" required maxlength="200000" rows="12"${
  invalidIf(`${prefix}-body`, form.errors["body"])
}>${form.body}</textarea>
${fieldError(`${prefix}-body`, form.errors["body"])}`

const percent = (share: number) => `${Math.round(share * 100)} %`

/** Whether the embedded responder would answer with `best`: its thresholds (`PARLEY_KB_MIN_*`). */
const embeddedVerdict = (best: Hit | undefined, thresholds: { readonly minRelevance: number; readonly minCoverage: number }) => {
  const rule = `relevance at least ${thresholds.minRelevance} and coverage at least ${percent(thresholds.minCoverage)}`
  if (best === undefined) return `The embedded responder would not answer: no passage matches (it needs ${rule}).`
  const answers = best.relevance >= thresholds.minRelevance && best.coverage >= thresholds.minCoverage
  return answers
    ? `The embedded responder would answer with the first passage (${rule}).`
    : `The embedded responder would not answer: the first passage falls short of ${rule}.`
}

const passagesFound = (n: number) =>
  n === 0 ? "No passage matches." : n === 1 ? "1 passage." : `${n} passages, best first.`

const passageItem = (request: WorkspaceRequest, hit: Hit): Html => html`
<li>
  <h3><a href="${articlePath(request, hit.articleId)}">${hit.title}</a>${hit.heading === null ? "" : html` › ${hit.heading}`}</h3>
  ${hit.url === null ? "" : html`<p class="hint">${externalLink(hit.url)}</p>`}
  <blockquote>${multiline(hit.text)}</blockquote>
  <dl class="facts">
    <dt>Score</dt><dd>${hit.score.toFixed(2)}</dd>
    <dt>Relevance</dt><dd>${hit.relevance.toFixed(2)}</dd>
    <dt>Coverage</dt><dd>${percent(hit.coverage)} of the question's words</dd>
  </dl>
</li>`

const searchSection = (request: WorkspaceRequest, query: string) =>
  Effect.gen(function*() {
    const hits = query === "" ? [] : yield* Knowledge.use((knowledge) => knowledge.search(request.workspace.id, query, MAX_SEARCH_RESULTS))
    const thresholds = (yield* DashboardSettings).embedded
    const results = query === "" ? "" : html`
<h3>Passages for “${query}”</h3>
<p role="status">${passagesFound(hits.length)} ${embeddedVerdict(hits[0], thresholds)}</p>
<ol>${hits.map((hit) => passageItem(request, hit))}</ol>`
    return html`
<section class="panel" aria-labelledby="search-heading">
  <h2 id="search-heading">Search as the AI would</h2>
  <form method="get" action="${aiPath(request, "/knowledge")}" role="search">
    <label for="search-q">Question or keywords
      <span class="hint">The search the AI runs: its search_knowledge tool gets the first ${MAX_SEARCH_RESULTS} passages;
        the embedded responder and preemptive retrieval the first ${PREEMPTIVE_PASSAGES}.</span></label>
    <input id="search-q" name="q" type="search" maxlength="1000" value="${query}">
    <p><button type="submit">Search</button></p>
  </form>
  ${results}
</section>`
  })

const articleRow = (request: WorkspaceRequest, article: ArticleSummary): Html => html`
<tr>
  <td><a href="${articlePath(request, article.id)}">${article.title}</a></td>
  <td>${article.url === null ? html`<span class="muted">—</span>` : externalLink(article.url)}</td>
  <td>${time(article.createdAt)}</td>
  <td>${count(article.characters)} characters, ${count(article.passages)} ${article.passages === 1 ? "passage" : "passages"}</td>
  <td><div class="row">
    <a href="${articlePath(request, article.id)}">Edit<span class="visually-hidden"> ${article.title}</span></a>
    <form method="post" action="${articlePath(request, article.id, "/delete")}" class="inline"
      data-confirm="Remove the article “${article.title}”? The AI will no longer find it.">
      ${csrfField(request.session)}
      <button type="submit" class="danger">Remove<span class="visually-hidden"> ${article.title}</span></button>
    </form>
  </div></td>
</tr>`

const articlesSection = (request: WorkspaceRequest, articles: ReadonlyArray<ArticleSummary>): Html => html`
<section class="panel" aria-labelledby="articles-heading">
  <h2 id="articles-heading">Articles (${articles.length})</h2>
  <div class="table-wrap" tabindex="0"><table>
    <thead><tr><th scope="col">Title</th><th scope="col">Link</th><th scope="col">Created</th><th scope="col">Size</th><th scope="col">Actions</th></tr></thead>
    <tbody>${
  articles.length === 0
    ? html`<tr><td colspan="5">No article yet: the AI has nothing to answer from. Add one below.</td></tr>`
    : articles.map((article) => articleRow(request, article))
}</tbody>
  </table></div>
</section>`

const addSection = (request: WorkspaceRequest, form: ArticleForm): Html => html`
<section class="panel" aria-labelledby="add-heading">
  <h2 id="add-heading">Add an article</h2>
  <form method="post" action="${aiPath(request, "/knowledge")}">
    ${csrfField(request.session)}
    ${articleFields("new-article", form)}
    <p><button type="submit">Add article</button></p>
  </form>
</section>`

const knowledgePage = (request: WorkspaceRequest, form: ArticleForm, status = 200) =>
  Effect.gen(function*() {
    const query = (request.url.searchParams.get("q") ?? "").trim().slice(0, 1000)
    const search = yield* searchSection(request, query)
    const articles = yield* Knowledge.use((knowledge) => knowledge.listSummaries(request.workspace.id))
    return aiPage(request, {
      tab: "knowledge",
      title: "Knowledge base",
      status,
      body: html`${doneNotice(request, DONE)}${search}${articlesSection(request, articles)}${addSection(request, form)}`
    })
  })

const knowledgeRoute = workspaceRoute(
  "GET",
  "/dashboard/w/:workspaceId/ai/knowledge",
  (request) => knowledgePage(request, emptyArticleForm)
)

const addArticleRoute = workspaceRoute("POST", "/dashboard/w/:workspaceId/ai/knowledge", (request) =>
  Effect.gen(function*() {
    const article = yield* readArticleForm(request)
    if (Result.isFailure(article)) return yield* knowledgePage(request, article.failure, 422)
    yield* Admin.use((admin) => admin.createArticle(request.workspace.id, article.success))
    return seeOther(aiPath(request, "/knowledge?done=added"))
  }))

/** The workspace's article named in the path (404 for a malformed id, an unknown one or another workspace's). */
const articleOf = (request: WorkspaceRequest) =>
  Effect.flatMap(
    param(request, "articleId", ArticleId),
    (articleId) => Knowledge.use((knowledge) => knowledge.getArticle(request.workspace.id, articleId))
  )

const articlePage = (request: WorkspaceRequest, article: Article, form: ArticleForm, status = 200) =>
  aiPage(request, {
    tab: "knowledge",
    title: article.title,
    status,
    body: html`
<p><a href="${aiPath(request, "/knowledge")}">Knowledge base</a> ›</p>
<section class="panel" aria-labelledby="edit-heading">
  <h2 id="edit-heading">Edit “${article.title}”</h2>
  <p class="hint">Created ${time(article.createdAt)}; ${count([...article.body].length)} characters.</p>
  <form method="post" action="${articlePath(request, article.id)}">
    ${csrfField(request.session)}
    ${articleFields("article", form)}
    <p><button type="submit">Save article</button></p>
  </form>
</section>
<section class="panel" aria-labelledby="remove-heading">
  <h2 id="remove-heading">Remove</h2>
  <form method="post" action="${articlePath(request, article.id, "/delete")}"
    data-confirm="Remove the article “${article.title}”? The AI will no longer find it.">
    ${csrfField(request.session)}
    <button type="submit" class="danger">Remove this article</button>
  </form>
</section>`
  })

const articleRoute = workspaceRoute("GET", "/dashboard/w/:workspaceId/ai/knowledge/:articleId", (request) =>
  Effect.map(articleOf(request), (article) => articlePage(request, article, formOfArticle(article))))

const updateArticleRoute = workspaceRoute("POST", "/dashboard/w/:workspaceId/ai/knowledge/:articleId", (request) =>
  Effect.gen(function*() {
    const article = yield* articleOf(request)
    const input = yield* readArticleForm(request)
    if (Result.isFailure(input)) return articlePage(request, article, input.failure, 422)
    yield* Admin.use((admin) => admin.updateArticle(request.workspace.id, article.id, input.success))
    return seeOther(aiPath(request, "/knowledge?done=updated"))
  }))

const removeArticleRoute = workspaceRoute("POST", "/dashboard/w/:workspaceId/ai/knowledge/:articleId/delete", (request) =>
  Effect.gen(function*() {
    const articleId = yield* param(request, "articleId", ArticleId)
    yield* Admin.use((admin) => admin.deleteArticle(request.workspace.id, articleId))
    return seeOther(aiPath(request, "/knowledge?done=removed"))
  }))

// -------------------------------------------------------------------------------------------------
// Report
// -------------------------------------------------------------------------------------------------

/** `?days=`: 1 to 90, 30 when absent; the problem otherwise. */
const daysOf = (request: WorkspaceRequest): Result.Result<number, string> => {
  const raw = request.url.searchParams.get("days")
  if (raw === null || raw.trim() === "") return Result.succeed(DEFAULT_REPORT_DAYS)
  return Option.match(Schema.decodeUnknownOption(ReportDays)(raw.trim()), {
    onNone: () => Result.fail(`Days should be a whole number from 1 to ${MAX_REPORT_DAYS}`),
    onSome: Result.succeed
  })
}

const usd = (cost: number | undefined): Html => {
  if (cost === undefined) return html`<span title="No price for a model used: see AI_PRICES">—</span>`
  if (cost === 0) return html`$0.00`
  if (cost < 0.0001) return html`&lt; $0.0001`
  return html`$${cost < 0.01 ? cost.toFixed(4) : cost.toFixed(2)}`
}

const csatCell = (csat: ReportLine["csat"]): Html => {
  const average = averageOf(csat)
  return average === null ? html`<span class="muted">—</span>` : html`${average.toFixed(1)} of 5 (${count(csat.answers)})`
}

const daysForm = (request: WorkspaceRequest, value: string, error: string | undefined): Html => html`
<form method="get" action="${aiPath(request, "/report")}" class="row">
  <label for="report-days">Days <span class="hint">1 to ${MAX_REPORT_DAYS}, today (UTC) included</span></label>
  <input id="report-days" name="days" type="number" min="1" max="${MAX_REPORT_DAYS}" value="${value}"${
  invalidIf("report-days", error)
}>
  <button type="submit">Show</button>
</form>
${fieldError("report-days", error)}`

const activityTable = (report: Report, nameOf: (id: string) => string): Html => html`
<div class="table-wrap" tabindex="0"><table>
  <caption class="visually-hidden">AI activity per integration and day</caption>
  <thead><tr>
    <th scope="col">Day (UTC)</th><th scope="col">Integration</th><th scope="col">Answered by the AI alone</th>
    <th scope="col">Handed over</th><th scope="col">Closed</th><th scope="col">CSAT after AI replies (answers)</th>
    <th scope="col">Input tokens</th><th scope="col">Output tokens</th><th scope="col">Estimated cost</th>
  </tr></thead>
  <tbody>${
  report.lines.map((line) =>
    html`<tr><th scope="row">${line.day}</th><td>${nameOf(line.integrationId)}</td><td>${count(line.answeredByAi)}</td>
      <td>${count(line.handedOver)}</td><td>${count(line.closed)}</td><td>${csatCell(line.csat)}</td>
      <td>${count(line.inputTokens)}</td><td>${count(line.outputTokens)}</td><td>${usd(line.cost)}</td></tr>`
  )
}</tbody>
  <tfoot><tr><th scope="row" colspan="2">Total</th><td>${count(report.total.answeredByAi)}</td>
    <td>${count(report.total.handedOver)}</td><td>${count(report.total.closed)}</td><td>${csatCell(report.total.csat)}</td>
    <td>${count(report.total.inputTokens)}</td><td>${count(report.total.outputTokens)}</td><td>${usd(report.total.cost)}</td></tr></tfoot>
</table></div>`

const modelRow = (line: ReportLine, use: ModelUse, nameOf: (id: string) => string): Html =>
  html`<tr><th scope="row">${line.day}</th><td>${nameOf(line.integrationId)}</td><td>${use.provider}</td>
    <td>${use.model ?? html`<span class="muted">—</span>`}</td><td>${count(use.replies)}</td>
    <td>${count(use.inputTokens)}</td><td>${count(use.outputTokens)}</td><td>${usd(use.cost)}</td></tr>`

const modelsTable = (report: Report, nameOf: (id: string) => string): Html => html`
<h3>By model</h3>
<div class="table-wrap" tabindex="0"><table>
  <caption class="visually-hidden">AI replies and tokens per integration, day and model</caption>
  <thead><tr>
    <th scope="col">Day (UTC)</th><th scope="col">Integration</th><th scope="col">Provider</th><th scope="col">Model</th>
    <th scope="col">Replies</th><th scope="col">Input tokens</th><th scope="col">Output tokens</th><th scope="col">Estimated cost</th>
  </tr></thead>
  <tbody>${report.lines.flatMap((line) => line.models.map((use) => modelRow(line, use, nameOf)))}</tbody>
</table></div>`

const pricesNote = (report: Report): Html =>
  report.unpriced.length === 0
    ? html`<p class="hint">Costs are estimates from <code>AI_PRICES</code> (USD per million input/output tokens); the embedded responder costs nothing.</p>`
    : html`<p class="alert" role="note">No price for ${report.unpriced.join(", ")}: ${
      report.unpriced.length === 1 ? "its" : "their"
    } cost shows as —. Set <code>AI_PRICES</code>
      (USD per million input/output tokens) and restart Parley, e.g.
      <code>AI_PRICES="${report.unpriced.map((model) => `${model}=0.15/0.60`).join(",")}"</code> with your provider's prices.</p>`

const reportBody = (report: Report, nameOf: (id: string) => string): Html =>
  report.lines.length === 0
    ? html`<p>No AI activity from ${report.window.from} to ${report.window.to} (UTC).</p>`
    : html`<p>From ${report.window.from} to ${report.window.to} (UTC), newest day first; days without activity are left out.</p>
${activityTable(report, nameOf)}${modelsTable(report, nameOf)}${pricesNote(report)}`

const REPORT_TERMS = html`
<details>
  <summary>What the columns count</summary>
  <dl class="facts">
    <dt>Answered by the AI alone</dt><dd>Conversations the AI answered or closed that day that were never handed over to a person (not the fallback message of a model that failed, nor the embedded responder's "I couldn't find an answer"). In the total, a conversation active on several days counts once.</dd>
    <dt>Handed over, closed</dt><dd>Conversations handed over (escalated) or closed that day, by the AI, the integrator or a timeout.</dd>
    <dt>CSAT after AI replies</dt><dd>Average score (1 to 5) of the customers' answers that day in conversations the AI had answered or closed before, and how many.</dd>
    <dt>Tokens</dt><dd>The model calls recorded with the replies that day: the replies, their checks, titles and summaries. Calls with no reply (the inactivity timers', a reply an agent overtook) are not in it: <code>parley ai usage</code> has every call billed.</dd>
    <dt>Estimated cost</dt><dd>Tokens × the model's price in <code>AI_PRICES</code>; — when a model used has no price.</dd>
  </dl>
</details>`

const reportRoute = workspaceRoute("GET", "/dashboard/w/:workspaceId/ai/report", (request) =>
  Effect.gen(function*() {
    const days = daysOf(request)
    const page = (body: Html, status = 200) => aiPage(request, { tab: "report", title: "Report", status, body })
    if (Result.isFailure(days)) {
      const typed = request.url.searchParams.get("days") ?? ""
      return page(html`<h2>Report per integration and day</h2>${daysForm(request, typed, days.failure)}`, 422)
    }
    const prices = (yield* DashboardSettings).aiPrices
    const report = yield* readReport(request.workspace.id, days.success, prices)
    const integrations = yield* Admin.use((admin) => admin.listIntegrations(request.workspace.id))
    const names = new Map<string, string>(integrations.map((integration) => [integration.integrationId, integration.settings.name]))
    const nameOf = (id: string) => names.get(id) ?? id
    return page(html`<h2>Report per integration and day</h2>
${daysForm(request, String(days.success), undefined)}
${reportBody(report, nameOf)}
${REPORT_TERMS}`)
  }))

export const AiRoutes: ReadonlyArray<DashboardRoute<DashboardServices>> = [
  modelRoute,
  setInstructionsRoute,
  knowledgeRoute,
  addArticleRoute,
  articleRoute,
  updateArticleRoute,
  removeArticleRoute,
  reportRoute
]
