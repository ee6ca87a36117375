import { describe, expect, it } from "@effect/vitest"
import { HttpApiClient } from "effect/http-api"
import { HttpClient, HttpClientRequest } from "effect/http"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { Api } from "../../src/Api.js"
import { WorkspaceId } from "../../src/Domain/Ids.js"
import { IntegrationJson } from "../../src/Domain/Integration.js"
import {
  CreatedToken,
  CreatedWorkspace,
  RotatedSecret,
  TokenSummary,
  WorkspaceDetail,
  WorkspaceSummary
} from "../../src/Domain/Workspace.js"
import { ADMIN_TOKEN, bodyAs, call, TestApp, ValidationBody } from "../support/App.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/
/** `prl_` + 32 random bytes in base64url. */
const API_TOKEN = /^prl_[A-Za-z0-9_-]{43}$/
/** `whsec_` + 32 random bytes in base64. */
const WEBHOOK_SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/

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

const admin = (method: "GET" | "POST" | "DELETE", path: string, body?: unknown) =>
  call(method, `/admin/v1${path}`, body === undefined ? { token: ADMIN_TOKEN } : { token: ADMIN_TOKEN, body })

const createWorkspace = (name = "Acme") =>
  Effect.gen(function*() {
    const reply = yield* admin("POST", "/workspaces", { name })
    expect(reply.status).toBe(201)
    return (yield* bodyAs(CreatedWorkspace)(reply)).body
  })

const unknownWorkspace = "00000000-0000-4000-8000-000000000000"

describe("admin API /admin/v1", () => {
  it.layer(TestApp(), { timeout: 120_000 })((it) => {
    it.effect("POST /workspaces answers 201 with exactly id, name, apiToken, webhookSecret; the token works", () =>
      Effect.gen(function*() {
        const reply = yield* admin("POST", "/workspaces", { name: "Acme support" })
        expect(reply.status).toBe(201)
        // Exactly id, name, apiToken, webhookSecret: the decode allows no other key.
        const { body } = yield* bodyAs(CreatedWorkspace)(reply)
        expect(body).toEqual({
          id: expect.stringMatching(UUID),
          name: "Acme support",
          apiToken: expect.stringMatching(API_TOKEN),
          webhookSecret: expect.stringMatching(WEBHOOK_SECRET)
        })
        const list = yield* call("GET", "/v1/integration/list", { token: body.apiToken })
        expect(list.status).toBe(200)
        expect(list.body).toEqual([])
      }))

    it.effect("POST /workspaces validates the name", () =>
      Effect.gen(function*() {
        const empty = yield* admin("POST", "/workspaces", { name: "" })
        expect(empty.status).toBe(422)
        expect(empty.body).toEqual({
          detail: [{ loc: ["body", "name"], msg: expect.any(String), type: "string_too_short" }]
        })
        const missing = yield* admin("POST", "/workspaces", {})
        expect(missing.status).toBe(422)
        expect(missing.body).toEqual({ detail: [{ loc: ["body", "name"], msg: "Field required", type: "missing" }] })
        const malformed = yield* call("POST", "/admin/v1/workspaces", { token: ADMIN_TOKEN, raw: "{\"name\": " })
        expect(malformed.status).toBe(422)
        expect(malformed.body).toEqual({ detail: [{ loc: ["body"], msg: expect.any(String), type: "json_invalid" }] })
      }))

    it.effect("GET /workspaces lists workspaces without any secret", () =>
      Effect.gen(function*() {
        const a = yield* createWorkspace("Listed A")
        const b = yield* createWorkspace("Listed B")
        const reply = yield* admin("GET", "/workspaces")
        expect(reply.status).toBe(200)
        // Every item exactly {id, name, createdAt}: the decode allows no other key.
        const { body: list } = yield* bodyAs(Schema.Array(WorkspaceSummary))(reply)
        const mine = list.filter((w) => w.id === a.id || w.id === b.id)
        expect(mine).toEqual([
          { id: a.id, name: "Listed A", createdAt: expect.stringMatching(ISO_UTC) },
          { id: b.id, name: "Listed B", createdAt: expect.stringMatching(ISO_UTC) }
        ])
        const text = JSON.stringify(reply.body)
        expect(text).not.toContain(a.webhookSecret)
        expect(text).not.toContain(a.apiToken)
        expect(text).not.toContain("whsec_")
        expect(text).not.toContain("prl_")
      }))

    it.effect("GET /workspaces/{id} shows the webhook secret", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace("Detailed")
        const reply = yield* admin("GET", `/workspaces/${workspace.id}`)
        expect(reply.status).toBe(200)
        expect(reply.body).toEqual({
          id: workspace.id,
          name: "Detailed",
          createdAt: expect.stringMatching(ISO_UTC),
          webhookSecret: workspace.webhookSecret,
          webhookSecretEncryptedAtRest: false
        })
      }))

    it.effect("tokens: POST creates {id, token}, GET lists them without token values", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace()
        const created = yield* admin("POST", `/workspaces/${workspace.id}/tokens`, { name: "ci" })
        expect(created.status).toBe(201)
        // Exactly id and token: the decode allows no other key.
        const { body: token } = yield* bodyAs(CreatedToken)(created)
        expect(token).toEqual({ id: expect.stringMatching(UUID), token: expect.stringMatching(API_TOKEN) })
        expect(token.token).not.toBe(workspace.apiToken)
        const works = yield* call("GET", "/v1/integration/list", { token: token.token })
        expect(works.status).toBe(200)

        const unnamed = yield* admin("POST", `/workspaces/${workspace.id}/tokens`, {})
        expect(unnamed.status).toBe(201)
        const { body: unnamedToken } = yield* bodyAs(CreatedToken)(unnamed)

        const listed = yield* admin("GET", `/workspaces/${workspace.id}/tokens`)
        expect(listed.status).toBe(200)
        expect(listed.body).toEqual([
          { id: expect.stringMatching(UUID), name: "default", createdAt: expect.stringMatching(ISO_UTC), revokedAt: null },
          { id: token.id, name: "ci", createdAt: expect.stringMatching(ISO_UTC), revokedAt: null },
          { id: unnamedToken.id, name: null, createdAt: expect.stringMatching(ISO_UTC), revokedAt: null }
        ])
        const text = JSON.stringify(listed.body)
        expect(text).not.toContain(token.token)
        expect(text).not.toContain(workspace.apiToken)
        expect(text).not.toContain("prl_")
      }))

    it.effect("DELETE /tokens/{id} answers 204; the revoked token answers 401 at once, the other still works", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace()
        const { body: second } = yield* admin("POST", `/workspaces/${workspace.id}/tokens`, { name: "to revoke" }).pipe(
          Effect.flatMap(bodyAs(CreatedToken))
        )
        expect((yield* call("GET", "/v1/integration/list", { token: second.token })).status).toBe(200)

        const revoked = yield* admin("DELETE", `/tokens/${second.id}`)
        expect(revoked.status).toBe(204)
        expect(revoked.body).toBeUndefined()

        const rejected = yield* call("GET", "/v1/integration/list", { token: second.token })
        expect(rejected.status).toBe(401)
        expect(rejected.body).toEqual({ detail: expect.any(String) })
        expect(rejected.headers["www-authenticate"]).toBe("Bearer")
        const still = yield* call("GET", "/v1/integration/list", { token: workspace.apiToken })
        expect(still.status).toBe(200)

        const { body: listed } = yield* admin("GET", `/workspaces/${workspace.id}/tokens`).pipe(
          Effect.flatMap(bodyAs(Schema.Array(TokenSummary)))
        )
        expect(listed.find((t) => t.id === second.id)?.revokedAt).toMatch(ISO_UTC)
        expect(listed.find((t) => t.name === "default")?.revokedAt).toBeNull()

        // Revoking twice is harmless; an unknown token is a 404.
        expect((yield* admin("DELETE", `/tokens/${second.id}`)).status).toBe(204)
        const unknown = yield* admin("DELETE", `/tokens/${unknownWorkspace}`)
        expect(unknown.status).toBe(404)
        expect(unknown.body).toEqual({ detail: "Token not found" })
      }))

    it.effect("POST /workspaces/{id}/webhook-secret/rotate gives a new secret and the previous one's expiry", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace()
        const reply = yield* admin("POST", `/workspaces/${workspace.id}/webhook-secret/rotate`)
        expect(reply.status).toBe(200)
        // Exactly webhookSecret and previousSecretExpiresAt: the decode allows no other key.
        const { body } = yield* bodyAs(RotatedSecret)(reply)
        expect(body.webhookSecret).toMatch(WEBHOOK_SECRET)
        expect(body.webhookSecret).not.toBe(workspace.webhookSecret)
        expect(body.previousSecretExpiresAt).toMatch(ISO_UTC)
        // The default grace period is 24 hours. The server runs on the test layer's clock (the TestClock
        // this test shares), so the expiry is exactly that clock's now plus 24 hours.
        const now = DateTime.toEpochMillis(yield* DateTime.now)
        expect(Date.parse(body.previousSecretExpiresAt)).toBe(now + 24 * 3600_000)

        const { body: detail } = yield* admin("GET", `/workspaces/${workspace.id}`).pipe(
          Effect.flatMap(bodyAs(WorkspaceDetail))
        )
        expect(detail.webhookSecret).toBe(body.webhookSecret)
      }))

    it.effect("POST /workspaces/{id}/integrations answers 201 with an Integration and the default flags", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace()
        const reply = yield* admin("POST", `/workspaces/${workspace.id}/integrations`, {
          name: "Website chat",
          webhook: { url: "https://hooks.example.com/parley" }
        })
        expect(reply.status).toBe(201)
        expect(reply.body).toEqual({
          integrationId: expect.stringMatching(UUID),
          integration: "api",
          settings: {
            name: "Website chat",
            supportedFeatures: defaultFeatures,
            toneId: null,
            firstResponseToneId: null,
            channelsSettings: {},
            webhook: { url: "https://hooks.example.com/parley", headers: {}, metadata: {} },
            webhookEnabled: true
          }
        })
        const { body: created } = yield* bodyAs(IntegrationJson)(reply)
        expect(Object.keys(created.settings.supportedFeatures)).toHaveLength(19)

        const flagged = yield* admin("POST", `/workspaces/${workspace.id}/integrations`, {
          name: "Chatwoot",
          integration: "chatwoot",
          webhook: { url: "http://127.0.0.1:9/hook", headers: { "X-Api-Key": "k" }, metadata: { shop: "eu" } },
          supportedFeatures: { typing: false, csat: true },
          channelsSettings: { chatwoot: { accountId: 1 } }
        })
        expect(flagged.status).toBe(201)
        const { body: flaggedBody } = yield* bodyAs(IntegrationJson)(flagged)
        expect(flaggedBody.integration).toBe("chatwoot")
        expect(flaggedBody.settings).toEqual({
          name: "Chatwoot",
          supportedFeatures: { ...defaultFeatures, typing: false, csat: true },
          toneId: null,
          firstResponseToneId: null,
          channelsSettings: { chatwoot: { accountId: 1 } },
          webhook: { url: "http://127.0.0.1:9/hook", headers: { "X-Api-Key": "k" }, metadata: { shop: "eu" } },
          webhookEnabled: true
        })

        const listed = yield* admin("GET", `/workspaces/${workspace.id}/integrations`)
        expect(listed.status).toBe(200)
        expect(listed.body).toEqual([reply.body, flagged.body])
        const viaApi = yield* call("GET", "/v1/integration/list", { token: workspace.apiToken })
        expect(viaApi.body).toEqual([reply.body, flagged.body])
      }))

    it.effect("an invalid webhook url is a 422 at [body, webhook, url] of type url_parsing", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace()
        for (const url of ["not a url", "ftp://example.com/hook", "/relative/path", "mailto:a@example.com"]) {
          const reply = yield* admin("POST", `/workspaces/${workspace.id}/integrations`, { name: "Bad", webhook: { url } })
          expect(reply.status, url).toBe(422)
          expect(reply.body, url).toEqual({
            detail: [{ loc: ["body", "webhook", "url"], msg: expect.any(String), type: "url_parsing" }]
          })
        }
        const missing = yield* admin("POST", `/workspaces/${workspace.id}/integrations`, { name: "No hook" })
        expect(missing.status).toBe(422)
        expect(missing.body).toEqual({ detail: [{ loc: ["body", "webhook"], msg: "Field required", type: "missing" }] })
        const listed = yield* admin("GET", `/workspaces/${workspace.id}/integrations`)
        expect(listed.body).toEqual([])
      }))

    it.effect("a custom webhook header Parley sets itself, or one that is no HTTP token, is a 422", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace()
        const cases = [
          ["X-Parley-Webhook-Signature", "reserved_header"],
          ["x-parley-webhook-timestamp", "reserved_header"],
          ["Content-Type", "reserved_header"],
          ["Bad Header", "header_name"]
        ] as const
        for (const [name, type] of cases) {
          const reply = yield* admin("POST", `/workspaces/${workspace.id}/integrations`, {
            name: "Reserved",
            webhook: { url: "https://hooks.example.com/x", headers: { [name]: "forged" } }
          })
          expect(reply.status, name).toBe(422)
          const { body: { detail } } = yield* bodyAs(ValidationBody)(reply)
          expect(detail, name).toHaveLength(1)
          expect(detail[0].loc.slice(0, 3), name).toEqual(["body", "webhook", "headers"])
          expect(detail[0], name).toMatchObject({ msg: expect.any(String), type })
        }
        const listed = yield* admin("GET", `/workspaces/${workspace.id}/integrations`)
        expect(listed.body).toEqual([])
      }))

    it.effect("POST /workspaces/{id}/tones answers 201 {id, name, instructions}; GET lists them", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace()
        const reply = yield* admin("POST", `/workspaces/${workspace.id}/tones`, {
          name: "Friendly",
          instructions: "Be warm and brief."
        })
        expect(reply.status).toBe(201)
        expect(reply.body).toEqual({ id: expect.stringMatching(UUID), name: "Friendly", instructions: "Be warm and brief." })
        const listed = yield* admin("GET", `/workspaces/${workspace.id}/tones`)
        expect(listed.status).toBe(200)
        expect(listed.body).toEqual([reply.body])
        const invalid = yield* admin("POST", `/workspaces/${workspace.id}/tones`, { name: "No instructions" })
        expect(invalid.status).toBe(422)
        expect(invalid.body).toEqual({
          detail: [{ loc: ["body", "instructions"], msg: "Field required", type: "missing" }]
        })
      }))

    it.effect("an unknown workspace id answers 404 {detail: Workspace not found} on every workspace route", () =>
      Effect.gen(function*() {
        const routes: Array<readonly ["GET" | "POST", string, unknown?]> = [
          ["GET", `/workspaces/${unknownWorkspace}`],
          ["GET", `/workspaces/${unknownWorkspace}/tokens`],
          ["POST", `/workspaces/${unknownWorkspace}/tokens`, { name: "x" }],
          ["POST", `/workspaces/${unknownWorkspace}/webhook-secret/rotate`],
          ["GET", `/workspaces/${unknownWorkspace}/integrations`],
          ["POST", `/workspaces/${unknownWorkspace}/integrations`, { name: "x", webhook: { url: "https://x.test" } }],
          ["GET", `/workspaces/${unknownWorkspace}/tones`],
          ["POST", `/workspaces/${unknownWorkspace}/tones`, { name: "x", instructions: "y" }]
        ]
        for (const [method, path, body] of routes) {
          const reply = yield* admin(method, path, body)
          expect(reply.status, `${method} ${path}`).toBe(404)
          expect(reply.body, `${method} ${path}`).toEqual({ detail: "Workspace not found" })
        }
      }))

    it.effect("a workspace id that is not a UUID is a 422 at [path, workspaceId] of type uuid_parsing", () =>
      Effect.gen(function*() {
        for (const path of ["/workspaces/not-a-uuid", "/workspaces/not-a-uuid/tokens", "/workspaces/123/tones"]) {
          const reply = yield* admin("GET", path)
          expect(reply.status, path).toBe(422)
          expect(reply.body, path).toEqual({
            detail: [{ loc: ["path", "workspaceId"], msg: expect.any(String), type: "uuid_parsing" }]
          })
        }
        const token = yield* admin("DELETE", "/tokens/nope")
        expect(token.status).toBe(422)
        expect(token.body).toEqual({ detail: [{ loc: ["path", "tokenId"], msg: expect.any(String), type: "uuid_parsing" }] })
      }))

    it.effect("only the admin token opens it: a workspace API token or none answers 401", () =>
      Effect.gen(function*() {
        const workspace = yield* createWorkspace()
        const withApiToken = yield* call("GET", "/admin/v1/workspaces", { token: workspace.apiToken })
        expect(withApiToken.status).toBe(401)
        expect(withApiToken.body).toEqual({ detail: expect.any(String) })
        expect(withApiToken.headers["www-authenticate"]).toBe("Bearer")
        const create = yield* call("POST", "/admin/v1/workspaces", { token: workspace.apiToken, body: { name: "Sneaky" } })
        expect(create.status).toBe(401)

        const none = yield* call("GET", "/admin/v1/workspaces")
        expect(none.status).toBe(401)
        expect(none.body).toEqual({ detail: expect.any(String) })
        expect(none.headers["www-authenticate"]).toBe("Bearer")

        const wrong = yield* call("GET", `/admin/v1/workspaces/${workspace.id}`, { token: `${ADMIN_TOKEN}x` })
        expect(wrong.status).toBe(401)
        const basic = yield* call("GET", "/admin/v1/workspaces", { headers: { authorization: `Basic ${ADMIN_TOKEN}` } })
        expect(basic.status).toBe(401)

        // Nothing was created by the rejected call.
        const { body: listed } = yield* admin("GET", "/workspaces").pipe(Effect.flatMap(bodyAs(Schema.Array(WorkspaceSummary))))
        expect(listed.filter((w) => w.name === "Sneaky")).toEqual([])
      }))

    it.effect("the typed client round-trips the admin API", () =>
      Effect.gen(function*() {
        const client = yield* HttpApiClient.make(Api, {
          transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(ADMIN_TOKEN))
        })
        const workspace = yield* client.admin.createWorkspace({ payload: { name: "Typed" } })
        expect(workspace.name).toBe("Typed")
        expect(workspace.apiToken).toMatch(API_TOKEN)
        const detail = yield* client.admin.getWorkspace({ params: { workspaceId: workspace.id } })
        expect(detail.id).toBe(workspace.id)
        expect(detail.webhookSecret).toBe(workspace.webhookSecret)
        expect(detail.webhookSecretEncryptedAtRest).toBe(false)

        const token = yield* client.admin.createToken({ params: { workspaceId: workspace.id }, payload: { name: "typed" } })
        const tokens = yield* client.admin.listTokens({ params: { workspaceId: workspace.id } })
        expect(tokens.map((t) => [t.name, t.revokedAt])).toEqual([["default", null], ["typed", null]])
        // The real clock (this test runs on the TestClock; the server's does not).
        const beforeRevoke = Date.now()
        yield* client.admin.revokeToken({ params: { tokenId: token.id } })
        const afterRevoke = Date.now()
        const after = yield* client.admin.listTokens({ params: { workspaceId: workspace.id } })
        // The revoked token, and only it, carries the instant it was revoked.
        expect(after.map((t) => [t.id, t.revokedAt === null])).toEqual([[tokens[0]!.id, true], [token.id, false]])
        const revokedAt = after.find((t) => t.id === token.id)?.revokedAt
        expect(DateTime.isDateTime(revokedAt) ? revokedAt.epochMilliseconds : revokedAt).toSatisfy(
          (millis) => typeof millis === "number" && millis >= beforeRevoke && millis <= afterRevoke
        )

        const tone = yield* client.admin.createTone({
          params: { workspaceId: workspace.id },
          payload: { name: "Formal", instructions: "Use formal language." }
        })
        expect(yield* client.admin.listTones({ params: { workspaceId: workspace.id } })).toEqual([tone])

        const integration = yield* client.admin.createIntegration({
          params: { workspaceId: workspace.id },
          payload: {
            name: "Typed integration",
            integration: "api",
            webhook: { url: "https://hooks.example.com/typed", headers: {}, metadata: {} },
            supportedFeatures: { streaming: true },
            channelsSettings: {}
          }
        })
        expect(integration.settings.supportedFeatures).toEqual({ ...defaultFeatures, streaming: true })
        expect(yield* client.admin.listIntegrations({ params: { workspaceId: workspace.id } })).toEqual([integration])

        const rotated = yield* client.admin.rotateWebhookSecret({ params: { workspaceId: workspace.id } })
        expect(rotated.webhookSecret).not.toBe(workspace.webhookSecret)

        // A typed 404 decodes into the NotFound error with the wire's detail.
        const missing = yield* client.admin.getWorkspace({
          params: { workspaceId: Schema.decodeSync(WorkspaceId)(unknownWorkspace) }
        }).pipe(Effect.result)
        expect(Result.isFailure(missing)).toBe(true)
        if (Result.isFailure(missing)) {
          expect(missing.failure).toMatchObject({ _tag: "NotFound", detail: "Workspace not found" })
        }
      }))
  })
})
