/** The operator's list of workspaces, and creating one (its first API token and secret shown once). */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { Admin } from "../Admin/Admin.js"
import { decodeInput } from "../Domain/Errors.js"
import { NewWorkspace } from "../Domain/Workspace.js"
import { copyable, plainPage, time } from "./Components.js"
import { html } from "./Html.js"
import { csrfField, field, operatorRoute, seeOther, workspaceRoute } from "./Page.js"

const list = operatorRoute("GET", "/dashboard/workspaces", (request) =>
  Effect.gen(function*() {
    const workspaces = yield* Admin.use((admin) => admin.listWorkspaces())
    return plainPage(request, {
      title: "Workspaces",
      section: "workspaces",
      body: html`
<h1>Workspaces</h1>
<div class="table-wrap" tabindex="0"><table>
  <thead><tr><th scope="col">Name</th><th scope="col">ID</th><th scope="col">Created</th></tr></thead>
  <tbody>${
        workspaces.length === 0
          ? html`<tr><td colspan="3">No workspace yet.</td></tr>`
          : workspaces.map((workspace) =>
            html`<tr><td><a href="/dashboard/w/${workspace.id}/integrations">${workspace.name}</a></td><td><code>${workspace.id}</code></td><td>${
              time(workspace.createdAt)
            }</td></tr>`
          )
      }</tbody>
</table></div>
<section class="panel">
  <h2>Create a workspace</h2>
  <form method="post" action="/dashboard/workspaces">
    ${csrfField(request.session)}
    <label for="workspace-name">Name</label>
    <input id="workspace-name" name="name" type="text" required maxlength="200">
    <p><button type="submit">Create workspace</button></p>
  </form>
</section>`
    })
  }))

const create = operatorRoute("POST", "/dashboard/workspaces", (request) =>
  Effect.gen(function*() {
    // Checked by the admin API's own schema: the same problems, with the same messages.
    const decoded = yield* Effect.result(decodeInput(NewWorkspace)({ name: field(request, "name") ?? "" }))
    if (Result.isFailure(decoded)) {
      return plainPage(request, {
        title: "Workspaces",
        section: "workspaces",
        status: 422,
        body: html`<h1>Create a workspace</h1><p class="error" role="alert">Nothing was created: ${
          decoded.failure.problems.map((problem) => problem.message).join("; ")
        }</p>
          <p><a href="/dashboard/workspaces">Back</a></p>`
      })
    }
    const created = yield* Admin.use((admin) => admin.createWorkspace(decoded.success.name))
    return plainPage(request, {
      title: "Workspace created",
      section: "workspaces",
      status: 201,
      body: html`
<h1>Workspace ${created.name} created</h1>
<p class="notice" role="status">Copy the API token now: it is shown only this once.</p>
<dl class="facts">
  <dt>Workspace ID</dt><dd>${copyable("workspace-id", created.id)}</dd>
  <dt>API token</dt><dd>${copyable("new-token", created.apiToken)}</dd>
  <dt>Webhook secret</dt><dd>${copyable("webhook-secret", created.webhookSecret)}</dd>
</dl>
<p><a class="button" href="/dashboard/w/${created.id}/integrations">Open the workspace</a></p>`
    })
  }))

const workspaceHome = workspaceRoute("GET", "/dashboard/w/:workspaceId", (request) =>
  Effect.succeed(seeOther(`/dashboard/w/${request.workspace.id}/integrations`)))

export const WorkspaceRoutes = [list, create, workspaceHome]
