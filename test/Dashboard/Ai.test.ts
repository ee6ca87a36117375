/**
 * The dashboard's AI section (`/dashboard/w/:workspaceId/ai`) as a browser without JavaScript uses it:
 * the model (never its key), standing instructions, the knowledge base (add, edit, remove, search as
 * the AI would), tenancy (another workspace's page and articles answer 404 and stay unchanged), and the
 * report per integration and day with its estimated cost (`AI_PRICES`), from real replies of a model
 * double. The report's arithmetic and `AI_PRICES` are also checked on their own.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { Knowledge } from "../../src/Ai/Knowledge.js"
import { parseAiPrices } from "../../src/Config.js"
import { buildReport, type UsageRow } from "../../src/Dashboard/AiReport.js"
import { IntegrationId, WorkspaceId } from "../../src/Domain/Ids.js"
import { InstructionsJson } from "../../src/Domain/Instructions.js"
import { IntegrationJson } from "../../src/Domain/Integration.js"
import { ArticleJson } from "../../src/Domain/Knowledge.js"
import { CreatedWorkspace } from "../../src/Domain/Workspace.js"
import { explainStartFailure, Settings, startFailureLine } from "../../src/Startup.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, type Tenant, TestApp, TestAppWithWorkers, TestConfig, ValidationBody } from "../support/App.js"
import { csrfOf, dashboard, type DashboardSession, type Page, visibleText } from "../support/Dashboard.js"
import { eventually } from "../support/Eventually.js"
import { type LlmServer, makeLlmServer, turn } from "../support/LlmServers.js"

const KEY = "sk-dashboard-secret-key-0123456789WXYZ"

const SHIPPING = {
  title: "Shipping and delivery",
  url: "https://help.example.com/shipping",
  body: `## Delivery times

Orders leave our warehouse within 1–2 business days. Standard delivery takes 3–5 business days.

## Tracking

We email you a tracking number as soon as your parcel leaves the warehouse.`
}

const admin = (method: "GET" | "POST" | "PUT" | "DELETE", path: string, body?: unknown) =>
  call(method, `/admin/v1${path}`, { token: ADMIN_TOKEN, ...(body === undefined ? {} : { body }) })

const createWorkspace = (name: string) =>
  admin("POST", "/workspaces", { name }).pipe(Effect.flatMap(bodyAs(CreatedWorkspace)), Effect.map((reply) => reply.body))

const createIntegration = (workspaceId: string, name: string) =>
  admin("POST", `/workspaces/${workspaceId}/integrations`, { name, webhook: { url: "http://127.0.0.1:9/webhook" } }).pipe(
    Effect.flatMap(bodyAs(IntegrationJson)),
    Effect.map((reply) => reply.body)
  )

const addArticle = (workspaceId: string, article: { readonly title: string; readonly body: string; readonly url?: string }) =>
  admin("POST", `/workspaces/${workspaceId}/articles`, article).pipe(
    Effect.flatMap(bodyAs(ArticleJson)),
    Effect.map((reply) => reply.body)
  )

const articlesOf = (workspaceId: string) =>
  admin("GET", `/workspaces/${workspaceId}/articles`).pipe(
    Effect.flatMap(bodyAs(Schema.Array(ArticleJson))),
    Effect.map((reply) => reply.body)
  )

const instructionsOf = (workspaceId: string) =>
  admin("GET", `/workspaces/${workspaceId}/instructions`).pipe(
    Effect.flatMap(bodyAs(Schema.Array(InstructionsJson))),
    Effect.map((reply) => reply.body)
  )

/**
 * Signs in with `token` and reads the session's CSRF token from `workspaceId`'s AI page (which the
 * session must be able to see).
 */
const signInTo = (workspaceId: string, token: string = ADMIN_TOKEN) =>
  Effect.gen(function*() {
    const answer = yield* dashboard("POST", "/dashboard/sign-in", { form: { token } })
    expect(answer.status).toBe(303)
    const cookie = (answer.headers["set-cookie"] ?? "").split(";")[0] ?? ""
    const page = yield* dashboard("GET", `/dashboard/w/${workspaceId}/ai`, { session: { cookie, csrf: "" } })
    expect(page.status).toBe(200)
    return { cookie, csrf: csrfOf(page) } satisfies DashboardSession
  })

const page = (session: DashboardSession, path: string) => dashboard("GET", path, { session })
const post = (session: DashboardSession, path: string, form: Record<string, string>) =>
  dashboard("POST", path, { session, form })

/** The text of the element with `id`'s field error, if the page shows one. */
const fieldErrorOf = (answer: Page, id: string): string | undefined =>
  new RegExp(`<p id="${id}-error" class="field-error" role="alert">([^<]*)</p>`).exec(answer.text)?.[1]

// ---------------------------------------------------------------------------------------------------

describe("the dashboard's AI section", () => {
  layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("shows the workspace's model, where its settings come from and the key only as set, never the key", () =>
      Effect.gen(function*() {
        const own = yield* createWorkspace("Own model")
        const plain = yield* createWorkspace("Default model")
        const set = yield* admin("PUT", `/workspaces/${own.id}/ai`, { provider: "openai", model: "gpt-4o-mini", apiKey: KEY })
        expect(set.status).toBe(200)
        const session = yield* signInTo(own.id)

        const ownPage = yield* page(session, `/dashboard/w/${own.id}/ai`)
        expect(ownPage.status).toBe(200)
        const text = visibleText(ownPage)
        expect(text).toContain("The workspace's own settings")
        expect(text).toMatch(/Provider openai Model gpt-4o-mini Base URL The vendor's API responses API key Set, ending in …WXYZ/)
        expect(ownPage.text).not.toContain(KEY)
        expect(ownPage.text).not.toContain("0123456789")

        const defaultPage = yield* page(session, `/dashboard/w/${plain.id}/ai`)
        expect(visibleText(defaultPage)).toContain("The global default of this Parley")
        expect(visibleText(defaultPage)).toContain("Provider embedded: the offline knowledge-base responder")
      }))

    it.effect("sets standing instructions per scope, shows those in force and earlier versions, and refuses too long ones (422)", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace("Instructions")
        const shop = yield* createIntegration(workspace.id, "Shop")
        const session = yield* signInTo(workspace.id)
        const path = `/dashboard/w/${workspace.id}/ai/instructions`

        const first = yield* post(session, path, { scope: "workspace", text: "Never promise refunds." })
        expect(first.status).toBe(303)
        expect(first.headers["location"]).toBe(`/dashboard/w/${workspace.id}/ai?done=instructions`)
        yield* post(session, path, { scope: shop.integrationId, text: "Answer in two sentences\r\nat most." })
        yield* post(session, path, { scope: "workspace", text: "Offer the returns form." })

        const shown = yield* page(session, `/dashboard/w/${workspace.id}/ai?done=instructions`)
        const text = visibleText(shown)
        expect(text).toContain("Instructions saved")
        expect(text).toMatch(/The workspace \(every integration\) Offer the returns form\. Since/)
        expect(text).toMatch(/Earlier versions \(1\) .*Never promise refunds\./)
        expect(text).toMatch(/Integration Shop Answer in two sentences at most\. Since/)
        expect(shown.text).toContain("Answer in two sentences<br>at most.")
        const stored = yield* instructionsOf(workspace.id)
        expect(stored.map((version) => [version.integrationId, version.text])).toEqual([
          [null, "Offer the returns form."],
          [shop.integrationId, "Answer in two sentences\nat most."],
          [null, "Never promise refunds."]
        ])

        // "Change" opens the form on that scope, with the text in force.
        const change = yield* page(session, `/dashboard/w/${workspace.id}/ai?scope=${shop.integrationId}`)
        expect(change.text).toContain(`<option value="${shop.integrationId}" selected>`)
        expect(change.text).toMatch(/<textarea id="instructions-text"[^>]*>Answer in two sentences\nat most\.<\/textarea>/)

        // Too long: 422, the problem next to the field, what was typed kept, nothing stored.
        const tooLong = yield* post(session, path, { scope: "workspace", text: "x".repeat(2001) })
        expect(tooLong.status).toBe(422)
        expect(fieldErrorOf(tooLong, "instructions-text")).toBe("Instructions should have at most 2000 characters")
        expect(tooLong.text).toContain(`aria-invalid="true" aria-describedby="instructions-text-error"`)
        expect(tooLong.text).toContain("x".repeat(2001))
        // Text PostgreSQL cannot store (a NUL): 422 with the API's message, as the admin API answers.
        const nul = yield* post(session, path, { scope: "workspace", text: "a\u0000b" })
        expect(nul.status).toBe(422)
        const api = yield* admin("POST", `/workspaces/${workspace.id}/instructions`, { text: "a\u0000b" })
        expect(api.status).toBe(422)
        expect(fieldErrorOf(nul, "instructions-text")).toBe(
          (api.body as { detail: ReadonlyArray<{ msg: string }> }).detail[0]?.msg
        )
        // Another workspace's integration is not a scope of this one.
        const other = yield* createWorkspace("Other")
        const foreign = yield* createIntegration(other.id, "Foreign")
        const wrongScope = yield* post(session, path, { scope: foreign.integrationId, text: "Hello" })
        expect(wrongScope.status).toBe(422)
        expect(fieldErrorOf(wrongScope, "instructions-scope")).toBe("Choose the workspace or one of its integrations")
        expect(yield* instructionsOf(workspace.id)).toHaveLength(3)
        expect(yield* instructionsOf(other.id)).toEqual([])
      }))

    it.effect("adds, edits and removes articles through the pages, with the admin API's validation (422)", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace("Knowledge")
        const session = yield* signInTo(workspace.id)
        const knowledge = `/dashboard/w/${workspace.id}/ai/knowledge`

        const added = yield* post(session, knowledge, SHIPPING)
        expect(added.status).toBe(303)
        expect(added.headers["location"]).toBe(`${knowledge}?done=added`)
        const [article] = yield* articlesOf(workspace.id)
        expect(article).toMatchObject({ title: SHIPPING.title, url: SHIPPING.url })
        const listed = yield* page(session, `${knowledge}?done=added`)
        expect(visibleText(listed)).toContain("Article added")
        expect(visibleText(listed)).toMatch(/Articles \(1\) .*Shipping and delivery https:\/\/help\.example\.com\/shipping .* UTC \d+ characters, 2 passages Edit Shipping and delivery Remove Shipping and delivery/)
        expect(listed.text).toContain(`data-confirm="Remove the article “Shipping and delivery”? The AI will no longer find it."`)

        // The same problems as the admin API's 422, each next to its field; nothing stored.
        const bad = { title: "", url: "help", body: "Some text" }
        const refused = yield* post(session, knowledge, bad)
        expect(refused.status).toBe(422)
        const api = yield* admin("POST", `/workspaces/${workspace.id}/articles`, bad).pipe(Effect.flatMap(bodyAs(ValidationBody)))
        const apiMessage = (field: string) => api.body.detail.find((item) => item.loc[1] === field)?.msg
        expect(fieldErrorOf(refused, "new-article-title")).toBe(apiMessage("title"))
        expect(fieldErrorOf(refused, "new-article-url")).toBe(apiMessage("url"))
        expect(fieldErrorOf(refused, "new-article-body")).toBeUndefined()
        expect(refused.text).toContain(`value="help"`)
        expect(yield* articlesOf(workspace.id)).toHaveLength(1)

        // Edit: the form shows the article; saving replaces it, and search finds the new text only.
        const edit = yield* page(session, `${knowledge}/${article!.id}`)
        expect(edit.status).toBe(200)
        expect(edit.text).toContain(`value="${SHIPPING.title}"`)
        const invalidEdit = yield* post(session, `${knowledge}/${article!.id}`, { title: "Shipping", url: "", body: "" })
        expect(invalidEdit.status).toBe(422)
        expect(fieldErrorOf(invalidEdit, "article-body")).toBe("String should have at least 1 character")
        const saved = yield* post(session, `${knowledge}/${article!.id}`, {
          title: "Shipping",
          url: "",
          body: "Parcels travel by carrier pigeon and arrive within a week."
        })
        expect(saved.status).toBe(303)
        expect(yield* articlesOf(workspace.id)).toEqual([expect.objectContaining({ id: article!.id, title: "Shipping", url: null })])
        const pigeon = yield* Knowledge.use((kb) => kb.search(WorkspaceId.make(workspace.id), "carrier pigeon", 5))
        expect(pigeon.map((hit) => hit.title)).toEqual(["Shipping"])
        expect(yield* Knowledge.use((kb) => kb.search(WorkspaceId.make(workspace.id), "warehouse tracking number", 5))).toEqual([])

        // Remove.
        const removed = yield* post(session, `${knowledge}/${article!.id}/delete`, {})
        expect(removed.status).toBe(303)
        expect(removed.headers["location"]).toBe(`${knowledge}?done=removed`)
        expect(yield* articlesOf(workspace.id)).toEqual([])
        expect(yield* Knowledge.use((kb) => kb.search(WorkspaceId.make(workspace.id), "carrier pigeon", 5))).toEqual([])
        expect((yield* page(session, `${knowledge}/${article!.id}`)).status).toBe(404)
      }))

    it.effect("searches as the AI would: each passage with its article, heading, score, relevance and coverage", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace("Search")
        const article = yield* addArticle(workspace.id, SHIPPING)
        const session = yield* signInTo(workspace.id)
        const question = "How long does standard delivery take?"
        const hits = yield* Knowledge.use((kb) => kb.search(WorkspaceId.make(workspace.id), question, 5))
        expect(hits.length).toBeGreaterThan(0)

        const found = yield* page(session, `/dashboard/w/${workspace.id}/ai/knowledge?q=${encodeURIComponent(question)}`)
        expect(found.status).toBe(200)
        const text = visibleText(found)
        expect(text).toContain(`Passages for “${question}”`)
        const best = hits[0]!
        expect(text).toContain(
          `Shipping and delivery › Delivery times ${SHIPPING.url} Orders leave our warehouse within 1–2 business days. ` +
            `Standard delivery takes 3–5 business days. Score ${best.score.toFixed(2)} Relevance ${best.relevance.toFixed(2)} ` +
            `Coverage ${Math.round(best.coverage * 100)} % of the question's words`
        )
        expect(text).toContain("The embedded responder would answer with the first passage")
        expect(found.text).toContain(`href="/dashboard/w/${workspace.id}/ai/knowledge/${article.id}"`)

        const nothing = yield* page(session, `/dashboard/w/${workspace.id}/ai/knowledge?q=quantum+chromodynamics`)
        expect(visibleText(nothing)).toContain("No passage matches. The embedded responder would not answer")
      }))

    it.effect("an integrator sees only their workspace: another's AI pages and articles answer 404 and stay unchanged", () =>
      Effect.gen(function*() {
        const a = yield* createWorkspace("A")
        const b = yield* createWorkspace("B")
        const article = yield* addArticle(a.id, SHIPPING)
        const session = yield* signInTo(b.id, b.apiToken)

        for (const path of ["/ai", "/ai/knowledge", "/ai/report", `/ai/knowledge/${article.id}`]) {
          expect((yield* page(session, `/dashboard/w/${a.id}${path}`)).status, path).toBe(404)
        }
        // A's article by id within B's own pages: not found, nothing changed.
        expect((yield* page(session, `/dashboard/w/${b.id}/ai/knowledge/${article.id}`)).status).toBe(404)
        const edit = yield* post(session, `/dashboard/w/${b.id}/ai/knowledge/${article.id}`, {
          title: "Hijacked",
          url: "",
          body: "Nothing to see"
        })
        expect(edit.status).toBe(404)
        expect((yield* post(session, `/dashboard/w/${b.id}/ai/knowledge/${article.id}/delete`, {})).status).toBe(404)
        expect((yield* post(session, `/dashboard/w/${a.id}/ai/knowledge/${article.id}/delete`, {})).status).toBe(404)
        expect((yield* post(session, `/dashboard/w/${a.id}/ai/instructions`, { scope: "workspace", text: "x" })).status).toBe(404)
        expect(yield* articlesOf(a.id)).toEqual([expect.objectContaining({ id: article.id, title: SHIPPING.title })])
        expect(yield* instructionsOf(a.id)).toEqual([])
        // A malformed id is not found either.
        expect((yield* page(session, `/dashboard/w/${b.id}/ai/knowledge/not-an-id`)).status).toBe(404)
      }))

    it.effect("a ?done= code the page does not know shows no notice, a name of Object's prototype included", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace("Notices")
        const session = yield* signInTo(workspace.id)
        for (const done of ["constructor", "toString", "__proto__", "nonsense"]) {
          const shown = yield* page(session, `/dashboard/w/${workspace.id}/ai?done=${done}`)
          expect(shown.status).toBe(200)
          expect(shown.text, done).not.toContain(`class="notice"`)
        }
        expect((yield* page(session, `/dashboard/w/${workspace.id}/ai?done=instructions`)).text).toContain(`class="notice"`)
      }))

    it.effect("the report refuses days outside 1 to 90 (422) and says when there is no activity", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace("Quiet")
        const session = yield* signInTo(workspace.id)
        for (const days of ["0", "91", "abc", "1.5"]) {
          const refused = yield* page(session, `/dashboard/w/${workspace.id}/ai/report?days=${days}`)
          expect(refused.status, days).toBe(422)
          expect(fieldErrorOf(refused, "report-days")).toBe("Days should be a whole number from 1 to 90")
        }
        const quiet = yield* page(session, `/dashboard/w/${workspace.id}/ai/report?days=7`)
        expect(quiet.status).toBe(200)
        expect(visibleText(quiet)).toMatch(/No AI activity from \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2} \(UTC\)/)
      }))
  })
})

// ---------------------------------------------------------------------------------------------------
// The report from real replies

class Llm extends Context.Service<Llm, LlmServer>()("test/DashboardAi/Llm") {}

const App = Layer.unwrap(
  Effect.map(makeLlmServer, (server) =>
    Layer.merge(
      TestAppWithWorkers({ AI_PRICES: "priced-model=1.00/2.00", AI_RETRY_BUDGET: "2 seconds" }),
      Layer.succeed(Llm, server)
    ))
)

const ask = (tenant: Tenant, conversation: string, text: string) =>
  call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
    token: tenant.token,
    body: { id: `${conversation}-1`, role: "human", customerId: crypto.randomUUID(), conversationId: conversation, text }
  }).pipe(Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))))

const repliesOf = (tenant: Tenant) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM reply_metadata WHERE workspace_id = ${tenant.workspaceId}`).pipe(
      Effect.map((rows) => rows[0]?.n ?? 0),
      Effect.orDie
    )

/** Asks, and waits until the reply is stored (`replies` of the workspace's so far). */
const askAndWait = (tenant: Tenant, conversation: string, text: string, replies: number) =>
  Effect.andThen(ask(tenant, conversation, text), eventually(repliesOf(tenant), (n) => n === replies))

describe("the AI report", () => {
  layer(App, { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect("counts per integration and day what the AI did, with tokens and cost per model from AI_PRICES", () =>
      Effect.gen(function*() {
        const llm = yield* Llm
        const tenant = yield* makeTenant({ supportedFeatures: { typing: false } })
        const useModel = (model: string) =>
          admin("PUT", `/workspaces/${tenant.workspaceId}/ai`, {
            provider: "openai",
            model,
            baseUrl: llm.baseUrl,
            openAiApi: "chat",
            apiKey: KEY
          }).pipe(Effect.tap((reply) => Effect.sync(() => expect(reply.status).toBe(200))))
        yield* useModel("priced-model")

        llm.enqueue(turn("openai-chat", { text: "Parcels arrive in 3 to 5 days.", usage: { input: 400_000, output: 100_000 } }))
        yield* askAndWait(tenant, "c-answer", "When does my parcel arrive?", 1)
        const csat = yield* call("POST", `/v1/webhooks/${tenant.integrationId}/csat-response-received`, {
          token: tenant.token,
          body: { conversationId: "c-answer", ratingStyle: 5, ratingAnswer: 4 }
        })
        expect(csat.status).toBe(200)

        const handOver = { reason: "Refund", summary: "Wants a refund", message: "A colleague takes over." }
        llm.enqueue(turn("openai-chat", { toolCalls: [{ name: "escalate_to_human", args: handOver }], usage: { input: 100_000, output: 50_000 } }))
        yield* askAndWait(tenant, "c-handover", "I want a refund", 2)

        const close = { summary: "Thanked us", message: "Goodbye!" }
        llm.enqueue(turn("openai-chat", { toolCalls: [{ name: "close_conversation", args: close }], usage: { input: 100_000, output: 50_000 } }))
        yield* askAndWait(tenant, "c-close", "Thanks, that's all, bye", 3)

        yield* useModel("unpriced-model")
        llm.enqueue(turn("openai-chat", { text: "Hello!", usage: { input: 1_000, output: 500 } }))
        yield* askAndWait(tenant, "c-unpriced", "Hi", 4)

        const session = yield* signInTo(tenant.workspaceId)
        const report = yield* page(session, `/dashboard/w/${tenant.workspaceId}/ai/report`)
        expect(report.status).toBe(200)
        const text = visibleText(report)
        const day = /From (\d{4}-\d{2}-\d{2}) to (\d{4}-\d{2}-\d{2}) \(UTC\)/.exec(text)
        expect(day).not.toBeNull()
        const today = day![2]!
        // Answered alone: c-answer, c-close, c-unpriced (c-handover was handed over). One CSAT answer, 4.
        // Cost: a model without a price makes the day's cost unknown (—), and the page says how to price it.
        expect(text).toContain(`${today} Test integration 3 1 1 4.0 of 5 (1) 601,000 200,500 —`)
        expect(text).toContain(`${today} Test integration openai priced-model 3 600,000 200,000 $1.00`)
        expect(text).toContain(`${today} Test integration openai unpriced-model 1 1,000 500 —`)
        expect(text).toContain(`No price for unpriced-model`)
        expect(text).toContain(`AI_PRICES="unpriced-model=0.15/0.60"`)
        expect(report.text).not.toContain(KEY)
      }))

    it.effect("a reply that did not answer (the embedded responder's \"I couldn't find an answer\") is not answered by the AI", () =>
      Effect.gen(function*() {
        // The embedded responder, no article, no escalation: it says it found nothing, as an answer.
        const tenant = yield* makeTenant({ supportedFeatures: { escalation: false } })
        yield* askAndWait(tenant, "c-nothing", "Where is my parcel?", 1)
        const session = yield* signInTo(tenant.workspaceId)
        const text = visibleText(yield* page(session, `/dashboard/w/${tenant.workspaceId}/ai/report`))
        const today = /to (\d{4}-\d{2}-\d{2}) \(UTC\)/.exec(text)![1]!
        expect(text).toContain(`${today} Test integration 0 0 0 — 0 0 $0.00`)
        expect(text).toContain(`${today} Test integration embedded — 1 0 0 $0.00`)
      }))
  })
})

// ---------------------------------------------------------------------------------------------------
// The report's arithmetic and AI_PRICES, on their own

describe("the report's rows put together", () => {
  const shop = IntegrationId.make("11111111-1111-4111-8111-111111111111")
  const desk = IntegrationId.make("22222222-2222-4222-8222-222222222222")
  const window = { days: 2, from: "2026-11-22", to: "2026-11-23" }
  const prices = new Map([["gpt-4o-mini", { input: 0.15, output: 0.6 }]])
  const use = (integrationId: IntegrationId, day: string, provider: string, model: string | null, input: number, output: number): UsageRow => ({
    integrationId,
    day,
    provider,
    model,
    replies: 1,
    inputTokens: input,
    outputTokens: output
  })

  it("prices each model, the embedded responder at 0, and a day with an unpriced model has no total cost", () => {
    const report = buildReport(
      window,
      [
        { integrationId: shop, day: "2026-11-22", answeredByAi: 2, handedOver: 1, closed: 0, csatAnswers: 2, csatScoreSum: 9 },
        { integrationId: desk, day: "2026-11-23", answeredByAi: 0, handedOver: 0, closed: 1, csatAnswers: 0, csatScoreSum: 0 }
      ],
      [
        use(shop, "2026-11-22", "openai", "gpt-4o-mini", 2_000_000, 1_000_000),
        use(shop, "2026-11-22", "embedded", null, 0, 0),
        use(shop, "2026-11-23", "anthropic", "claude-3-5-haiku", 10, 10)
      ],
      prices,
      // Counted once over the window, whatever the days: not the sum of the lines.
      { answeredByAi: 1, handedOver: 1, closed: 1 }
    )
    expect(report.lines.map((line) => [line.day, line.integrationId, line.answeredByAi, line.inputTokens, line.cost])).toEqual([
      ["2026-11-23", shop, 0, 10, undefined],
      ["2026-11-23", desk, 0, 0, 0],
      ["2026-11-22", shop, 2, 2_000_000, 0.9]
    ])
    expect(report.lines[2]!.models.map((m) => m.cost)).toEqual([0.9, 0])
    expect(report.lines[2]!.csat).toEqual({ answers: 2, scoreSum: 9 })
    expect(report.total).toEqual({
      answeredByAi: 1,
      handedOver: 1,
      closed: 1,
      csat: { answers: 2, scoreSum: 9 },
      inputTokens: 2_000_010,
      outputTokens: 1_000_010,
      cost: undefined
    })
    expect(report.unpriced).toEqual(["claude-3-5-haiku"])
  })

  it("AI_PRICES: model=input/output per million tokens; model names may hold / and :", () => {
    const parsed = parseAiPrices(" gpt-4o-mini=0.15/0.60, meta-llama/Llama-3.1-8B=0/0 ,llama3.2:latest=.5/1,")
    expect(Result.isSuccess(parsed) && [...parsed.success]).toEqual([
      ["gpt-4o-mini", { input: 0.15, output: 0.6 }],
      ["meta-llama/Llama-3.1-8B", { input: 0, output: 0 }],
      ["llama3.2:latest", { input: 0.5, output: 1 }]
    ])
    expect(Result.isSuccess(parseAiPrices(""))).toBe(true)
    for (const bad of ["gpt-4o-mini", "gpt-4o-mini=0.15", "=1/2", "m=1/2/3", "m=-1/2", "m=a/b", "m=1/2,m=3/4"]) {
      expect(Result.isFailure(parseAiPrices(bad)), bad).toBe(true)
    }
  })

  it.effect("a malformed AI_PRICES fails the start, naming it", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Settings.pipe(Effect.provide(TestConfig({ AI_PRICES: "gpt-4o-mini=cheap" }))))
      expect(Exit.isFailure(exit)).toBe(true)
      const line = startFailureLine(explainStartFailure(Exit.isFailure(exit) ? exit.cause : Cause.empty))
      expect(line).toBe(
        "Parley failed to start (AI_PRICES): AI_PRICES entry \"gpt-4o-mini=cheap\" should be model=input/output in USD " +
          "per million tokens (e.g. gpt-4o-mini=0.15/0.60,claude-3-5-haiku=0.80/4.00)"
      )
    }))
})
