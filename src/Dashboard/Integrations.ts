/**
 * Integrations: the list, creating one (→ its ID), and the settings editor — every `supportedFeatures`
 * flag as a labelled toggle with a line on what it does, tones, timers, language, the other
 * `channelsSettings`, and the webhook. What is saved goes through the same schema and service checks
 * as `POST /v1/integration/{id}/update-settings`, and each problem is shown next to its field with the
 * API's own `msg` and `loc`; nothing is stored unless everything is valid.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as crypto from "node:crypto"
import { Admin } from "../Admin/Admin.js"
import { decodeInput, InvalidInput } from "../Domain/Errors.js"
import {
  defaultFeatures,
  FeatureName,
  type Integration,
  IntegrationSettingsPatch,
  masked,
  NewIntegration
} from "../Domain/Integration.js"
import { Language } from "../Domain/Language.js"
import { decodeJsonText, type JsonObject, jsonDepth, MAX_JSON_DEPTH } from "../Domain/Primitives.js"
import type { Tone } from "../Domain/Workspace.js"
import type { ValidationItem } from "../Domain/Validation.js"
import { Integrations } from "../Integrations/Integrations.js"
import { Workspaces } from "../Workspaces/Workspaces.js"
import {
  badge,
  copyable,
  doneNotice,
  integrationHeader,
  integrationPath,
  options,
  requestedIntegration,
  time,
  workspacePage,
  workspacePath
} from "./Components.js"
import { type Html, html } from "./Html.js"
import { csrfField, field, seeOther, type WorkspaceRequest, workspaceRoute } from "./Page.js"

/** One line on what each flag does (docs/features.md has the whole story). */
export const FEATURE_HELP: Record<FeatureName, string> = {
  typing: "Send a typing event before the model is called.",
  escalation: "Let the AI hand the conversation over to a human agent.",
  closeTicket: "Let the AI close a conversation it resolved.",
  messageInEscalation: "Tell the customer before a hand-over.",
  messageInEndConversation: "Say goodbye before closing (the AI's close and the close for inactivity).",
  csat: "Ask for the customer's rating when a conversation closes.",
  conversationSummary: "Write a summary for the human agent at a hand-over or close.",
  conversationTitle: "Give the conversation a title after its first exchange.",
  tone: "Follow the chosen tone's instructions (first reply and later replies).",
  preemptiveRetrieval: "Put the best knowledge passages in the prompt before the model asks.",
  getPastConversationsTool: "Let the model read the customer's five latest other conversations.",
  externalCustomerId: "Treat the message's customerId as your own customer id.",
  inactivityPrompt: "Check in once when the customer leaves the AI's message unanswered.",
  conversationTimeout: "Close the conversation after the customer's silence.",
  customerMessageGuardrails: "Keep prompt injections and abuse from the model; redact secrets.",
  verifier: "Check each draft against the passages it cites before sending it.",
  verifierResolution: "Close only when the verifier confirms the problem is solved.",
  verifierEscalation: "Hand over when a draft and its redraft both fail the verifier.",
  streaming: "Send the reply while it is written (message_delta events)."
}

const FEATURE_LABEL = (flag: FeatureName) => flag.replace(/([A-Z])/g, " $1").replace(/^./, (c) => c.toUpperCase())

// -----------------------------------------------------------------------------
// Problems, located as the API locates them, and the form field each belongs to
// -----------------------------------------------------------------------------

type Problems = ReadonlyArray<ValidationItem>

/** The form field a problem of the request body is about. */
const fieldOf = (loc: ValidationItem["loc"]): string => {
  const [, first, second, third] = loc
  if (first === "webhook") return second === "url" ? "url" : second === "headers" ? "headers" : "metadata"
  if (first === "integration") return "kind"
  if (first === "channelsSettings") {
    if (second === "timers") return third === "conversationTimeoutSeconds" ? "conversationTimeoutSeconds" : "inactivityPromptSeconds"
    if (second === "language") return "language"
    return "channelsSettings"
  }
  if (first === "supportedFeatures") return "features"
  return typeof first === "string" ? first : "form"
}

const problemsAt = (problems: Problems, name: string) => problems.filter((problem) => fieldOf(problem.loc) === name)

const errorId = (name: string) => `${name}-error`

/** `aria-invalid` and `aria-describedby` for a field with problems. */
const invalidAttributes = (problems: Problems, name: string): Html | "" =>
  problemsAt(problems, name).length === 0 ? "" : html`aria-invalid="true" aria-describedby="${errorId(name)}"`

/** The problems of one field, each with the API's message and location. */
const fieldErrors = (problems: Problems, name: string): Html | "" => {
  const mine = problemsAt(problems, name)
  return mine.length === 0 ? "" : html`<div id="${errorId(name)}">${
    mine.map((problem) => html`<p class="field-error">${problem.msg} <code>${problem.loc.join(".")}</code></p>`)
  }</div>`
}

const problemSummary = (problems: Problems): Html | "" =>
  problems.length === 0 ? "" : html`<div class="alert" role="alert"><p><strong>Nothing was saved:</strong> ${
    problems.length === 1 ? "one problem" : `${problems.length} problems`
  } (shown next to the fields).</p>${
    problemsAt(problems, "form").map((problem) => html`<p class="field-error">${problem.msg} <code>${problem.loc.join(".")}</code></p>`)
  }</div>`

const invalid = (loc: ReadonlyArray<string>, msg: string, type: string): ValidationItem => ({ loc: ["body", ...loc], msg, type })

// -----------------------------------------------------------------------------
// Reading the forms
// -----------------------------------------------------------------------------

/** `Name: value` lines (blank lines skipped) as a headers object; a line without `:` is a problem. */
const parseHeaders = (text: string): Result.Result<Record<string, string>, ValidationItem> => {
  const headers: Record<string, string> = {}
  for (const [i, line] of text.split(/\r?\n/).entries()) {
    if (line.trim() === "") continue
    const colon = line.indexOf(":")
    if (colon <= 0) {
      return Result.fail(invalid(["webhook", "headers"], `Line ${i + 1} should read Name: value`, "headers_format"))
    }
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim()
  }
  return Result.succeed(headers)
}

/** A JSON object typed into a textarea (empty: `{}`). */
const parseObject = (text: string, loc: ReadonlyArray<string>): Result.Result<Record<string, unknown>, ValidationItem> => {
  if (text.trim() === "") return Result.succeed({})
  // As the API refuses a body nested too deep (`Http.ts`): parsing it would overflow the stack.
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    return Result.fail(invalid(loc, `JSON nested deeper than ${MAX_JSON_DEPTH} levels`, "json_invalid"))
  }
  const parsed = decodeJsonText(text)
  if (Result.isFailure(parsed)) return Result.fail(invalid(loc, "Should be a JSON object: the text is not valid JSON", "json_invalid"))
  const value = parsed.success
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? Result.succeed({ ...value })
    : Result.fail(invalid(loc, "Input should be a valid object", "dict_type"))
}

/** A whole number typed into a field, or the text itself (so that the service's check reports it). */
const numberOrText = (text: string): number | string => /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text

interface Parsed<A> {
  readonly input: A
  readonly problems: Problems
}

const text = (form: URLSearchParams, name: string) => (form.get(name) ?? "").trim()

/** The webhook part of either form. */
const webhookOf = (form: URLSearchParams) => {
  const problems: Array<ValidationItem> = []
  const headers = parseHeaders(form.get("headers") ?? "")
  const metadata = parseObject(form.get("metadata") ?? "", ["webhook", "metadata"])
  if (Result.isFailure(headers)) problems.push(headers.failure)
  if (Result.isFailure(metadata)) problems.push(metadata.failure)
  return {
    webhook: {
      url: text(form, "url"),
      headers: Result.getOrElse(headers, () => ({})),
      metadata: Result.getOrElse(metadata, () => ({}))
    },
    problems
  }
}

/** The settings form as the API's update body (every field present). */
export const settingsPatchOf = (form: URLSearchParams): Parsed<Record<string, unknown>> => {
  const { problems, webhook } = webhookOf(form)
  const other = parseObject(form.get("channelsSettings") ?? "", ["channelsSettings"])
  if (Result.isFailure(other)) problems.push(other.failure)
  const channelsSettings: Record<string, unknown> = { ...Result.getOrElse(other, () => ({})) }
  delete channelsSettings["timers"]
  delete channelsSettings["language"]
  const prompt = text(form, "inactivityPromptSeconds")
  const timeout = text(form, "conversationTimeoutSeconds")
  if (prompt !== "" || timeout !== "") {
    channelsSettings["timers"] = {
      ...(prompt === "" ? {} : { inactivityPromptSeconds: numberOrText(prompt) }),
      ...(timeout === "" ? {} : { conversationTimeoutSeconds: numberOrText(timeout) })
    }
  }
  const language = text(form, "language")
  if (language !== "") channelsSettings["language"] = language
  const toneOf = (name: string) => text(form, name) === "" ? null : text(form, name)
  return {
    problems,
    input: {
      name: text(form, "name"),
      supportedFeatures: Object.fromEntries(FeatureName.literals.map((flag) => [flag, form.get(`feature.${flag}`) === "on"])),
      toneId: toneOf("toneId"),
      firstResponseToneId: toneOf("firstResponseToneId"),
      webhookEnabled: form.get("webhookEnabled") === "on",
      webhook,
      channelsSettings
    }
  }
}

/** The create form as the API's `NewIntegration` body. */
const newIntegrationOf = (form: URLSearchParams): Parsed<Record<string, unknown>> => {
  const { problems, webhook } = webhookOf(form)
  const kind = text(form, "kind")
  return { problems, input: { name: text(form, "name"), ...(kind === "" ? {} : { integration: kind }), webhook } }
}

/** The problems of an `InvalidInput` as the API's 422 lists them (in the body). */
const asProblems = (error: InvalidInput): Problems => error.at("body").detail

// -----------------------------------------------------------------------------
// Pages
// -----------------------------------------------------------------------------

const headersText = (headers: Readonly<Record<string, string>>) =>
  Object.entries(headers).map(([name, value]) => `${name}: ${value}`).join("\n")

/**
 * A digest of the stored settings, in the editor's form: a save made from an older page (the settings
 * changed meanwhile, by another user, the API, or a receiver's 410) is not applied over them.
 */
const settingsVersion = (integration: Integration): string =>
  crypto.createHash("sha256").update(JSON.stringify(masked(integration).settings)).digest("base64url").slice(0, 22)

/** The problem of a form made from settings that have changed since. */
const staleForm: ValidationItem = {
  loc: ["body"],
  msg: "The settings changed since this page was loaded (another user, the API, or a receiver's 410 Gone). " +
    "Check the form: saving it again replaces them with what it shows.",
  type: "stale_form"
}

/** The timers stored in `channelsSettings`, as far as they are numbers. */
const storedTimers = Schema.decodeUnknownOption(Schema.Struct({
  timers: Schema.optional(Schema.Struct({
    inactivityPromptSeconds: Schema.optional(Schema.Number),
    conversationTimeoutSeconds: Schema.optional(Schema.Number)
  }))
}))

const pretty = (value: unknown) => JSON.stringify(value, null, 2)

/** The create form's fields (empty, or as sent with their problems). */
const createForm = (request: WorkspaceRequest, form: URLSearchParams, problems: Problems) =>
  html`
<section class="panel" aria-labelledby="create-heading">
  <h2 id="create-heading">Create an integration</h2>
  ${problemSummary(problems)}
  <form method="post" action="${workspacePath(request, "/integrations")}">
    ${csrfField(request.session)}
    <label for="name">Name</label>
    <input id="name" name="name" type="text" required maxlength="200" value="${form.get("name") ?? ""}" ${invalidAttributes(problems, "name")}>
    ${fieldErrors(problems, "name")}
    <label for="kind">Kind <span class="hint">api for your own system; a helpdesk's name (chatwoot) for its events</span></label>
    <input id="kind" name="kind" type="text" value="${form.get("kind") ?? "api"}" ${invalidAttributes(problems, "kind")}>
    ${fieldErrors(problems, "kind")}
    <label for="url">Webhook URL <span class="hint">Where Parley POSTs the events (signed)</span></label>
    <input id="url" name="url" type="url" required value="${form.get("url") ?? ""}" placeholder="https://example.com/parley/webhook" ${invalidAttributes(problems, "url")}>
    ${fieldErrors(problems, "url")}
    <label for="headers">Headers <span class="hint">Sent with every webhook; one per line: Name: value</span></label>
    <textarea id="headers" name="headers" ${invalidAttributes(problems, "headers")}>${form.get("headers") ?? ""}</textarea>
    ${fieldErrors(problems, "headers")}
    <label for="metadata">Metadata <span class="hint">A JSON object echoed in every event's webhook metadata</span></label>
    <textarea id="metadata" name="metadata" ${invalidAttributes(problems, "metadata")}>${form.get("metadata") ?? ""}</textarea>
    ${fieldErrors(problems, "metadata")}
    <p><button type="submit">Create integration</button></p>
  </form>
</section>`

const listPage = (request: WorkspaceRequest, form: URLSearchParams, problems: Problems) =>
  Effect.gen(function*() {
    const integrations = yield* Integrations.use((service) => service.list(request.workspace.id))
    return workspacePage(request, {
      title: "Integrations",
      section: "integrations",
      status: problems.length === 0 ? 200 : 422,
      body: html`<h1>Integrations</h1>
<div class="table-wrap" tabindex="0"><table>
  <thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Integration ID</th><th scope="col">Webhook URL</th><th scope="col">Deliveries</th><th scope="col">Created</th></tr></thead>
  <tbody>${
        integrations.length === 0
          ? html`<tr><td colspan="6">No integration yet: create one below.</td></tr>`
          : integrations.map((integration) =>
            html`<tr>
    <td><a href="${integrationPath(request, integration.integrationId)}">${integration.settings.name}</a>
      <br><a href="${integrationPath(request, integration.integrationId, "/conversations")}">Conversations</a> ·
      <a href="${integrationPath(request, integration.integrationId, "/deliveries")}">Deliveries</a></td>
    <td>${integration.integration}</td>
    <td>${copyable(`integration-id-${integration.integrationId}`, integration.integrationId, "Copy ID")}</td>
    <td><code>${integration.settings.webhook.url}</code></td>
    <td>${integration.settings.webhookEnabled ? badge("enabled") : html`<span class="badge s-failed">paused</span>`}</td>
    <td>${time(integration.createdAt)}</td></tr>`
          )
      }</tbody>
</table></div>
${createForm(request, form, problems)}`
    })
  })

const list = workspaceRoute("GET", "/dashboard/w/:workspaceId/integrations", (request) =>
  listPage(request, new URLSearchParams(), []))

const create = workspaceRoute("POST", "/dashboard/w/:workspaceId/integrations", (request) =>
  Effect.gen(function*() {
    const parsed = newIntegrationOf(request.form)
    const decoded = yield* Effect.result(decodeInput(NewIntegration)(parsed.input))
    const problems = [...parsed.problems, ...(Result.isFailure(decoded) ? asProblems(decoded.failure) : [])]
    if (problems.length > 0 || Result.isFailure(decoded)) return yield* listPage(request, request.form, problems)
    const created = yield* Effect.result(Admin.use((admin) => admin.createIntegration(request.workspace.id, decoded.success)))
    if (Result.isFailure(created)) {
      if (created.failure instanceof InvalidInput) return yield* listPage(request, request.form, asProblems(created.failure))
      return yield* created.failure
    }
    const id = created.success.integrationId
    return seeOther(`${integrationPath(request, id)}?done=created`)
  }))

/** The settings editor, showing `form` (as sent) or the stored settings. */
const settingsPage = (
  request: WorkspaceRequest,
  integration: Integration,
  sent: URLSearchParams | undefined,
  problems: Problems,
  status = problems.length === 0 ? 200 : 422
) =>
  Effect.gen(function*() {
    const tones = yield* Workspaces.use((workspaces) => workspaces.listTones(request.workspace.id))
    const settings = masked(integration).settings
    const value = (name: string, stored: string) => sent === undefined ? stored : sent.get(name) ?? ""
    const channels: JsonObject = settings.channelsSettings
    const timers = Option.getOrUndefined(storedTimers(channels))?.timers
    const otherChannels = Object.fromEntries(Object.entries(channels).filter(([key]) => key !== "timers" && key !== "language"))
    const checked = (name: string, stored: boolean) => (sent === undefined ? stored : sent.get(name) === "on") ? html` checked` : ""
    const toneSelect = (name: "toneId" | "firstResponseToneId", label: string, hint: string) =>
      html`<label for="${name}">${label} <span class="hint">${hint}</span></label>
<select id="${name}" name="${name}" ${invalidAttributes(problems, name)}>
  ${options([["", "None"], ...tones.map((tone: Tone) => [tone.id, tone.name] as const)], value(name, settings[name] ?? ""))}
</select>${fieldErrors(problems, name)}`
    const timerField = (name: "inactivityPromptSeconds" | "conversationTimeoutSeconds", label: string, fallback: number) =>
      html`<label for="${name}">${label} <span class="hint">Seconds (1 – 604800); empty: ${fallback}</span></label>
<input id="${name}" name="${name}" type="number" min="1" max="604800" step="1"
  value="${value(name, String(timers?.[name] ?? ""))}" ${invalidAttributes(problems, name)}>
${fieldErrors(problems, name)}`
    const base = integrationPath(request, integration.integrationId)
    return workspacePage(request, {
      title: settings.name,
      section: "integrations",
      status,
      body: html`${integrationHeader(request, integration, "settings")}
${
        doneNotice(request, {
          created: `Integration created. Its ID is ${integration.integrationId}: copy it from the header above.`,
          saved: "Settings saved."
        })
      }
${problemSummary(problems)}
<form method="post" action="${base}" novalidate>
  ${csrfField(request.session)}
  <input type="hidden" name="version" value="${settingsVersion(integration)}">
  <section class="panel" aria-labelledby="general-heading">
    <h2 id="general-heading">General</h2>
    <label for="name">Name</label>
    <input id="name" name="name" type="text" maxlength="200" value="${value("name", settings.name)}" ${invalidAttributes(problems, "name")}>
    ${fieldErrors(problems, "name")}
    <p class="hint">Kind: ${integration.integration} · created ${time(integration.createdAt)}</p>
  </section>
  <section class="panel" aria-labelledby="features-heading">
    <h2 id="features-heading">Features</h2>
    ${fieldErrors(problems, "features")}
    <fieldset class="flags"><legend class="visually-hidden">Feature flags</legend>${
        FeatureName.literals.map((flag) =>
          html`<div class="flag"><input type="checkbox" id="feature-${flag}" name="feature.${flag}" aria-describedby="feature-${flag}-help"${
            checked(`feature.${flag}`, settings.supportedFeatures[flag])
          }>
        <label for="feature-${flag}">${FEATURE_LABEL(flag)} <code class="hint">${flag}</code>${
            defaultFeatures[flag] ? html` <span class="hint">(on by default)</span>` : ""
          }<span class="hint" id="feature-${flag}-help">${FEATURE_HELP[flag]}</span></label></div>`
        )
      }</fieldset>
  </section>
  <section class="panel" aria-labelledby="ai-heading">
    <h2 id="ai-heading">Tone, timers and language</h2>
    ${toneSelect("toneId", "Tone", "With the tone flag: later replies, the check-in and the goodbye")}
    ${toneSelect("firstResponseToneId", "First reply's tone", "With the tone flag: the first reply (else the tone above)")}
    ${timerField("inactivityPromptSeconds", "Check-in after", 240)}
    ${timerField("conversationTimeoutSeconds", "Close after", 1800)}
    <label for="language">Language <span class="hint">Empty: detected from the customer's messages</span></label>
    <select id="language" name="language" ${invalidAttributes(problems, "language")}>
      ${options([["", "Detect"], ...Language.literals.map((code) => [code, code] as const)], value("language", typeof channels["language"] === "string" ? channels["language"] : ""))}
    </select>
    ${fieldErrors(problems, "language")}
    <label for="channelsSettings">Other channel settings <span class="hint">JSON: customerData, guardrails, imageAttachments, a helpdesk's settings (docs/api.md); a helpdesk secret shows as ******** and is kept</span></label>
    <textarea id="channelsSettings" name="channelsSettings" rows="6" ${invalidAttributes(problems, "channelsSettings")}>${
        value("channelsSettings", pretty(otherChannels))
      }</textarea>
    ${fieldErrors(problems, "channelsSettings")}
  </section>
  <section class="panel" aria-labelledby="webhook-heading">
    <h2 id="webhook-heading">Webhook</h2>
    <label for="url">URL</label>
    <input id="url" name="url" type="url" value="${value("url", settings.webhook.url)}" ${invalidAttributes(problems, "url")}>
    ${fieldErrors(problems, "url")}
    <label for="headers">Headers <span class="hint">One per line: Name: value</span></label>
    <textarea id="headers" name="headers" ${invalidAttributes(problems, "headers")}>${value("headers", headersText(settings.webhook.headers))}</textarea>
    ${fieldErrors(problems, "headers")}
    <label for="metadata">Metadata <span class="hint">A JSON object</span></label>
    <textarea id="metadata" name="metadata" ${invalidAttributes(problems, "metadata")}>${value("metadata", pretty(settings.webhook.metadata))}</textarea>
    ${fieldErrors(problems, "metadata")}
    <div class="flag"><input type="checkbox" id="webhookEnabled" name="webhookEnabled"${checked("webhookEnabled", settings.webhookEnabled)}>
      <label for="webhookEnabled">Deliveries enabled <span class="hint">Off pauses deliveries (a receiver answering 410 Gone turns this off)</span></label></div>
    ${fieldErrors(problems, "webhookEnabled")}
  </section>
  <p><button type="submit">Save settings</button></p>
</form>`
    })
  })

const edit = workspaceRoute("GET", "/dashboard/w/:workspaceId/integrations/:integrationId", (request) =>
  Effect.flatMap(requestedIntegration(request), (integration) => settingsPage(request, integration, undefined, [])))

const save = workspaceRoute("POST", "/dashboard/w/:workspaceId/integrations/:integrationId", (request) =>
  Effect.gen(function*() {
    const integration = yield* requestedIntegration(request)
    if (field(request, "version") !== settingsVersion(integration)) {
      return yield* settingsPage(request, integration, request.form, [staleForm], 409)
    }
    const parsed = settingsPatchOf(request.form)
    const decoded = yield* Effect.result(decodeInput(IntegrationSettingsPatch)(parsed.input))
    const problems = [...parsed.problems, ...(Result.isFailure(decoded) ? asProblems(decoded.failure) : [])]
    if (problems.length > 0 || Result.isFailure(decoded)) return yield* settingsPage(request, integration, request.form, problems)
    const saved = yield* Effect.result(
      Integrations.use((integrations) => integrations.updateSettings(request.workspace.id, integration.integrationId, decoded.success))
    )
    if (Result.isFailure(saved)) {
      if (saved.failure instanceof InvalidInput) {
        return yield* settingsPage(request, integration, request.form, asProblems(saved.failure))
      }
      return yield* saved.failure
    }
    yield* Effect.logInfo("Integration settings saved from the dashboard").pipe(
      Effect.annotateLogs({ "workspace.id": request.workspace.id, "integration.id": integration.integrationId })
    )
    return seeOther(`${integrationPath(request, integration.integrationId)}?done=saved`)
  }))

export const IntegrationRoutes = [list, create, edit, save]
