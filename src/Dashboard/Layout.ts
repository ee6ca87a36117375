/**
 * The frame of every dashboard page: the header with the workspace's navigation and sign-out, a skip
 * link, one `<main>`, and the stylesheet and script Parley serves itself (`Assets.ts`).
 */
import * as Option from "effect/Option"
import { type Html, html } from "./Html.js"
import { ASSETS_VERSION } from "./Assets.js"
import type { Session } from "./Session.js"

/** The section of a workspace a page belongs to (its navigation link is marked current). */
export type Section = "workspaces" | "integrations" | "api" | "ai"

export interface LayoutOptions {
  readonly title: string
  readonly session: Option.Option<Session>
  readonly workspace?: { readonly id: string; readonly name: string } | undefined
  readonly section?: Section | undefined
  readonly body: Html
}

const link = (href: string, label: string, current: boolean) =>
  html`<a href="${href}"${current ? html` aria-current="page"` : ""}>${label}</a>`

export const layout = (options: LayoutOptions): Html => {
  const session = Option.getOrUndefined(options.session)
  const base = options.workspace === undefined ? undefined : `/dashboard/w/${options.workspace.id}`
  const nav = session === undefined ? "" : html`
    <nav aria-label="Dashboard">
      ${session.role === "operator" ? link("/dashboard/workspaces", "Workspaces", options.section === "workspaces") : ""}
      ${base === undefined ? "" : html`
        ${link(`${base}/integrations`, "Integrations", options.section === "integrations")}
        ${link(`${base}/api`, "API", options.section === "api")}
        ${link(`${base}/ai`, "AI", options.section === "ai")}`}
    </nav>
    <form method="post" action="/dashboard/sign-out" class="sign-out">
      <input type="hidden" name="_csrf" value="${session.csrf}">
      <span class="who">${session.role === "operator" ? "Operator" : "Integrator"}</span>
      <button type="submit" class="link">Sign out</button>
    </form>`
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · Parley</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/dashboard/assets/dashboard.css?v=${ASSETS_VERSION}">
<script src="/dashboard/assets/dashboard.js?v=${ASSETS_VERSION}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/dashboard">Parley</a>
  ${options.workspace === undefined ? "" : html`<span class="workspace" title="Workspace ${options.workspace.id}">${options.workspace.name}</span>`}
  ${nav}
</header>
<main id="main">
${options.body}
</main>
<div id="announce" class="visually-hidden" aria-live="polite"></div>
</body>
</html>`
}
