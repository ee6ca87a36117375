import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { IntegrationId, ToneId } from "../../src/Domain/Ids.js"
import { IntegrationJson } from "../../src/Domain/Integration.js"
import { ToneJson } from "../../src/Domain/Workspace.js"
import { ADMIN_TOKEN, bodyAs, call, makeTenant, type Tenant, TestApp, typedClient, ValidationBody } from "../support/App.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** Every feature flag with its default (docs/api.md). */
const defaultFeatures = {
  typing: true,
  escalation: true,
  closeTicket: true,
  conversationSummary: false,
  conversationTimeout: false,
  verifierResolution: false,
  verifierEscalation: false,
  csat: false,
  messageInEscalation: false,
  messageInEndConversation: false,
  getPastConversationsTool: false,
  externalCustomerId: false,
  inactivityPrompt: false,
  streaming: false,
  verifier: false,
  tone: false,
  conversationTitle: false,
  customerMessageGuardrails: false,
  preemptiveRetrieval: false
}

/** The settings `makeTenant()` creates. */
const initialSettings = {
  name: "Test integration",
  supportedFeatures: defaultFeatures,
  toneId: null,
  firstResponseToneId: null,
  channelsSettings: {},
  webhook: { url: "http://127.0.0.1:9/webhook", headers: {}, metadata: {} },
  webhookEnabled: true
}

const update = (tenant: Pick<Tenant, "token" | "integrationId">, body: unknown) =>
  call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, { token: tenant.token, body })

/** The integration as the list endpoint shows it now. */
const current = (tenant: Tenant) =>
  Effect.gen(function*() {
    const reply = yield* call("GET", "/v1/integration/list", { token: tenant.token })
    expect(reply.status).toBe(200)
    const { body } = yield* bodyAs(Schema.Array(IntegrationJson))(reply)
    const integration = body.find((i) => i.integrationId === tenant.integrationId)
    if (integration === undefined) {
      return yield* Effect.die(new Error(`Integration ${tenant.integrationId} is not listed: ${JSON.stringify(body)}`))
    }
    return integration
  })

const createTone = (workspaceId: string, name = "Friendly") =>
  Effect.gen(function*() {
    const reply = yield* call("POST", `/admin/v1/workspaces/${workspaceId}/tones`, {
      token: ADMIN_TOKEN,
      body: { name, instructions: `Speak in a ${name.toLowerCase()} way.` }
    })
    expect(reply.status).toBe(201)
    return (yield* bodyAs(ToneJson)(reply)).body.id
  })

describe("integrations", () => {
  it.layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("GET /v1/integration/list lists only the caller's workspace's integrations", () =>
      Effect.gen(function*() {
        const mine = yield* makeTenant()
        const theirs = yield* makeTenant()
        const second = yield* call("POST", `/admin/v1/workspaces/${mine.workspaceId}/integrations`, {
          token: ADMIN_TOKEN,
          body: { name: "Second", integration: "chatwoot", webhook: { url: "https://hooks.example.com/two" } }
        })
        expect(second.status).toBe(201)
        const { body: secondIntegration } = yield* bodyAs(IntegrationJson)(second)

        const reply = yield* call("GET", "/v1/integration/list", { token: mine.token })
        expect(reply.status).toBe(200)
        expect(reply.body).toEqual([
          { integrationId: mine.integrationId, integration: "api", settings: initialSettings },
          {
            integrationId: secondIntegration.integrationId,
            integration: "chatwoot",
            settings: {
              ...initialSettings,
              name: "Second",
              webhook: { url: "https://hooks.example.com/two", headers: {}, metadata: {} }
            }
          }
        ])

        const other = yield* call("GET", "/v1/integration/list", { token: theirs.token })
        expect(other.body).toEqual([{ integrationId: theirs.integrationId, integration: "api", settings: initialSettings }])
      }))

    it.effect("a settings change applies to the very next message (the remembered integration is forgotten)", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const message = (id: string) =>
          call("POST", `/v1/webhooks/${tenant.integrationId}/message-received`, {
            token: tenant.token,
            body: { id, role: "human", customerId: "crm-42", conversationId: "c-cache", text: "Hi", syncOnly: true }
          })
        // Read (and remembered) with externalCustomerId off: "crm-42" is not a Parley customer id.
        expect((yield* message("m-1")).status).toBe(422)
        expect((yield* update(tenant, { supportedFeatures: { externalCustomerId: true } })).status).toBe(200)
        expect((yield* message("m-2")).status).toBe(200)
        expect((yield* update(tenant, { supportedFeatures: { externalCustomerId: false } })).status).toBe(200)
        expect((yield* message("m-3")).status).toBe(422)
      }))

    it.effect("update-settings answers {integrationId, integration, settings}", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* update(tenant, { name: "Renamed" })
        expect(reply.status).toBe(200)
        // Exactly integrationId, integration and settings: the decode allows no other key.
        yield* bodyAs(IntegrationJson)(reply)
        expect(reply.body).toEqual({
          integrationId: tenant.integrationId,
          integration: "api",
          settings: { ...initialSettings, name: "Renamed" }
        })
      }))

    it.effect("a partial update: only name sent keeps everything else, and it is stored", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({ supportedFeatures: { csat: true, typing: false } })
        const full = yield* update(tenant, {
          webhook: { url: "https://hooks.example.com/a", headers: { "X-Api-Key": "k1" }, metadata: { region: "eu" } },
          channelsSettings: { web: { color: "blue" } }
        })
        expect(full.status).toBe(200)
        const before = (yield* bodyAs(IntegrationJson)(full)).body.settings

        const reply = yield* update(tenant, { name: "Only the name" })
        expect(reply.status).toBe(200)
        expect((yield* bodyAs(IntegrationJson)(reply)).body.settings).toEqual({ ...before, name: "Only the name" })
        expect(before).toEqual({
          ...initialSettings,
          supportedFeatures: { ...defaultFeatures, csat: true, typing: false },
          channelsSettings: { web: { color: "blue" } },
          webhook: { url: "https://hooks.example.com/a", headers: { "X-Api-Key": "k1" }, metadata: { region: "eu" } }
        })
        expect(yield* current(tenant)).toEqual(reply.body)

        // An empty body changes nothing.
        const empty = yield* update(tenant, {})
        expect(empty.status).toBe(200)
        expect(empty.body).toEqual(reply.body)
      }))

    it.effect("supportedFeatures merges flag by flag", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const first = yield* update(tenant, { supportedFeatures: { csat: true, typing: false } })
        expect(first.status).toBe(200)
        expect((yield* bodyAs(IntegrationJson)(first)).body.settings.supportedFeatures).toEqual({ ...defaultFeatures, csat: true, typing: false })

        const second = yield* update(tenant, { supportedFeatures: { streaming: true } })
        expect(second.status).toBe(200)
        const { body: merged } = yield* bodyAs(IntegrationJson)(second)
        expect(merged.settings.supportedFeatures).toEqual({
          ...defaultFeatures,
          csat: true,
          typing: false,
          streaming: true
        })
        expect((yield* current(tenant)).settings.supportedFeatures).toEqual(merged.settings.supportedFeatures)
      }))

    it.effect("webhook fields merge: sending only webhook.headers keeps url and metadata", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant({ webhookUrl: "https://hooks.example.com/keep" })
        const meta = yield* update(tenant, { webhook: { metadata: { shop: "eu-1" } } })
        expect(meta.status).toBe(200)
        expect((yield* bodyAs(IntegrationJson)(meta)).body.settings.webhook).toEqual({
          url: "https://hooks.example.com/keep",
          headers: {},
          metadata: { shop: "eu-1" }
        })

        const headers = yield* update(tenant, { webhook: { headers: { "X-Custom": "v1" } } })
        expect(headers.status).toBe(200)
        expect((yield* bodyAs(IntegrationJson)(headers)).body.settings.webhook).toEqual({
          url: "https://hooks.example.com/keep",
          headers: { "X-Custom": "v1" },
          metadata: { shop: "eu-1" }
        })

        const url = yield* update(tenant, { webhook: { url: "http://localhost:3000/hooks" } }).pipe(
          Effect.flatMap(bodyAs(IntegrationJson))
        )
        expect(url.body.settings.webhook).toEqual({
          url: "http://localhost:3000/hooks",
          headers: { "X-Custom": "v1" },
          metadata: { shop: "eu-1" }
        })
        expect((yield* current(tenant)).settings.webhook).toEqual(url.body.settings.webhook)
      }))

    it.effect("webhook.url must be an absolute http(s) URL, else 422 [body, webhook, url] url_parsing", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        for (const url of ["not a url", "/relative/hook", "ftp://example.com/hook", "javascript:alert(1)", "", 42]) {
          const reply = yield* update(tenant, { webhook: { url } })
          expect(reply.status, String(url)).toBe(422)
          expect(reply.body, String(url)).toEqual({
            detail: [{
              loc: ["body", "webhook", "url"],
              msg: expect.any(String),
              type: typeof url === "string" ? "url_parsing" : "string_type"
            }]
          })
        }
        expect((yield* current(tenant)).settings).toEqual(initialSettings)
      }))

    it.effect("a reserved webhook header is a 422 and is not stored", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* update(tenant, { webhook: { headers: { "X-Parley-Webhook-Signature": "forged" } } })
        expect(reply.status).toBe(422)
        const { body: { detail } } = yield* bodyAs(ValidationBody)(reply)
        expect(detail).toHaveLength(1)
        expect(detail[0].loc.slice(0, 3)).toEqual(["body", "webhook", "headers"])
        expect(detail[0]).toMatchObject({ msg: expect.any(String), type: "reserved_header" })
        expect((yield* current(tenant)).settings).toEqual(initialSettings)
      }))

    it.effect("toneId and firstResponseToneId: a tone of the same workspace is accepted, and null clears it", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const friendly = yield* createTone(tenant.workspaceId, "Friendly")
        const formal = yield* createTone(tenant.workspaceId, "Formal")
        const reply = yield* update(tenant, { toneId: friendly, firstResponseToneId: formal })
        expect(reply.status).toBe(200)
        expect((yield* bodyAs(IntegrationJson)(reply)).body.settings).toEqual({ ...initialSettings, toneId: friendly, firstResponseToneId: formal })
        expect((yield* current(tenant)).settings.toneId).toBe(friendly)

        const cleared = yield* update(tenant, { toneId: null })
        expect(cleared.status).toBe(200)
        expect((yield* bodyAs(IntegrationJson)(cleared)).body.settings).toEqual({ ...initialSettings, toneId: null, firstResponseToneId: formal })
      }))

    it.effect("toneId of another workspace's tone, or of no tone, is a 422 at [body, toneId]; nothing changes", () =>
      Effect.gen(function*() {
        const mine = yield* makeTenant()
        const theirs = yield* makeTenant()
        const foreign = yield* createTone(theirs.workspaceId, "Theirs")

        const reply = yield* update(mine, { name: "Should not stick", toneId: foreign })
        expect(reply.status).toBe(422)
        expect(reply.body).toEqual({ detail: [{ loc: ["body", "toneId"], msg: expect.any(String), type: expect.any(String) }] })

        const unknown = yield* update(mine, { toneId: "00000000-0000-4000-8000-000000000000" })
        expect(unknown.status).toBe(422)
        expect(unknown.body).toEqual({ detail: [{ loc: ["body", "toneId"], msg: expect.any(String), type: expect.any(String) }] })

        const firstResponse = yield* update(mine, { firstResponseToneId: foreign })
        expect(firstResponse.status).toBe(422)
        expect((yield* bodyAs(ValidationBody)(firstResponse)).body.detail[0].loc).toEqual(["body", "firstResponseToneId"])

        const notUuid = yield* update(mine, { toneId: "friendly" })
        expect(notUuid.status).toBe(422)
        expect(notUuid.body).toEqual({ detail: [{ loc: ["body", "toneId"], msg: expect.any(String), type: "uuid_parsing" }] })

        expect((yield* current(mine)).settings).toEqual(initialSettings)
      }))

    it.effect("a non-boolean flag is a 422 [body, supportedFeatures, typing] of type bool_type", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* update(tenant, { supportedFeatures: { typing: "yes", csat: true } })
        expect(reply.status).toBe(422)
        expect(reply.body).toEqual({
          detail: [{ loc: ["body", "supportedFeatures", "typing"], msg: "Input should be a valid boolean", type: "bool_type" }]
        })
        expect((yield* current(tenant)).settings.supportedFeatures).toEqual(defaultFeatures)

        const name = yield* update(tenant, { name: 7 })
        expect(name.status).toBe(422)
        expect(name.body).toEqual({ detail: [{ loc: ["body", "name"], msg: "Input should be a valid string", type: "string_type" }] })
      }))

    it.effect("another workspace's integration answers 404 {detail: Integration not found} and is untouched", () =>
      Effect.gen(function*() {
        const mine = yield* makeTenant()
        const theirs = yield* makeTenant()
        const reply = yield* update({ token: mine.token, integrationId: theirs.integrationId }, { name: "Hijacked" })
        expect(reply.status).toBe(404)
        expect(reply.body).toEqual({ detail: "Integration not found" })
        expect((yield* current(theirs)).settings.name).toBe("Test integration")

        const unknown = yield* update({ token: mine.token, integrationId: "00000000-0000-4000-8000-000000000000" }, {})
        expect(unknown.status).toBe(404)
        expect(unknown.body).toEqual({ detail: "Integration not found" })

        const notUuid = yield* update({ token: mine.token, integrationId: "abc" }, {})
        expect(notUuid.status).toBe(422)
        expect(notUuid.body).toEqual({
          detail: [{ loc: ["path", "integration_id"], msg: expect.any(String), type: "uuid_parsing" }]
        })
      }))

    it.effect("malformed JSON is a 422 json_invalid", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const reply = yield* call("POST", `/v1/integration/${tenant.integrationId}/update-settings`, {
          token: tenant.token,
          raw: "{\"name\": \"x\""
        })
        expect(reply.status).toBe(422)
        expect(reply.body).toEqual({ detail: [{ loc: ["body"], msg: expect.any(String), type: "json_invalid" }] })
        expect((yield* current(tenant)).settings).toEqual(initialSettings)
      }))

    it.effect("the typed client round-trips list and a successful update through the exported schemas", () =>
      Effect.gen(function*() {
        const tenant = yield* makeTenant()
        const tone = yield* createTone(tenant.workspaceId, "Typed")
        const client = yield* typedClient(tenant.token)
        const integrationId = Schema.decodeSync(IntegrationId)(tenant.integrationId)

        const updated = yield* client.integrations.updateSettings({
          params: { integration_id: integrationId },
          payload: {
            name: "Typed update",
            supportedFeatures: { csat: true },
            webhook: { headers: { "X-Typed": "yes" } },
            toneId: Schema.decodeSync(ToneId)(tone)
          }
        })
        expect(updated.integrationId).toBe(tenant.integrationId)
        expect(updated.integration).toBe("api")
        expect(updated.settings).toEqual({
          ...initialSettings,
          name: "Typed update",
          supportedFeatures: { ...defaultFeatures, csat: true },
          toneId: tone,
          webhook: { ...initialSettings.webhook, headers: { "X-Typed": "yes" } }
        })

        const listed = yield* client.integrations.list()
        expect(listed).toEqual([updated])
        expect(listed[0]!.integrationId).toMatch(UUID)
      }))
  })
})
