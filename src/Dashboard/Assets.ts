/**
 * The dashboard's only stylesheet and script, served by Parley itself (no CDN, nothing fetched at run
 * time), each named in pages with its content's hash so that browsers may keep it for good.
 *
 * The script is progressive: every page works without it (forms post and redirect). With it: copy
 * buttons (`data-copy` = the id of the element whose text to copy), confirmation of destructive forms
 * (`data-confirm`), and live regions (`data-live` = a server-sent events URL): each event's data is
 * `{target, id, html}`, the fragment replaces the element `id` if the page has it, else is appended to
 * the element `target`.
 */
import * as crypto from "node:crypto"

export const STYLESHEET = `
:root{--fg:#1b1f24;--muted:#555d66;--line:#d0d7de;--bg:#fff;--panel:#f6f8fa;--accent:#0b57d0;--ok:#116329;--bad:#a40e26;--warn:#7a4d00;
--human:#eef1f4;--ai:#e7f0fe;--agent:#e6f4ea;--note:#fff8c5;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
*{box-sizing:border-box}body{margin:0;line-height:1.45}
a{color:var(--accent)}a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,textarea:focus-visible,summary:focus-visible{outline:3px solid #f4b400;outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:#fff;padding:6px;z-index:9}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;margin:-1px;padding:0;border:0}.muted{color:var(--muted)}
.top{display:flex;flex-wrap:wrap;gap:12px 20px;align-items:center;padding:10px 20px;border-bottom:1px solid var(--line);background:var(--panel)}
.brand{font-weight:700;font-size:1.15rem;text-decoration:none;color:var(--fg)}.workspace{color:var(--muted)}
.top nav{display:flex;gap:14px;flex-wrap:wrap}.top nav a{text-decoration:none;padding:4px 2px}.top nav a[aria-current=page]{font-weight:700;border-bottom:3px solid var(--accent)}
.sign-out{margin-left:auto;display:flex;gap:8px;align-items:center}.who{color:var(--muted);font-size:.9rem}
main{max-width:1100px;margin:0 auto;padding:20px}
h1{font-size:1.5rem;margin:.2em 0 .6em}h2{font-size:1.15rem;margin:1.4em 0 .5em}
.panel{border:1px solid var(--line);border-radius:8px;padding:16px;margin:0 0 16px;background:#fff}
.tabs{display:flex;gap:16px;border-bottom:1px solid var(--line);margin-bottom:16px;flex-wrap:wrap}.tabs a{padding:6px 0;text-decoration:none}.tabs a[aria-current=page]{font-weight:700;border-bottom:3px solid var(--accent)}
table{border-collapse:collapse;width:100%;font-size:.93rem}th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}th{background:var(--panel)}
.table-wrap{overflow-x:auto;position:relative}
label{display:block;font-weight:600;margin:10px 0 4px}.hint{display:block;color:var(--muted);font-weight:400;font-size:.88rem}
input[type=text],input[type=url],input[type=password],input[type=number],input[type=search],input[type=datetime-local],select,textarea{width:100%;max-width:640px;padding:7px 9px;border:1px solid #8c959f;border-radius:6px;font:inherit;background:#fff;color:var(--fg)}
textarea{min-height:90px;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.88rem}
button,.button{display:inline-block;padding:7px 14px;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:#fff;font:inherit;cursor:pointer;text-decoration:none}
.secondary{background:#fff;color:var(--accent)}button.danger{background:var(--bad);border-color:var(--bad)}button.link{background:none;border:none;color:var(--accent);padding:0;text-decoration:underline}
.row{display:flex;gap:10px;align-items:center;flex-wrap:wrap}.inline{display:inline}
.error{color:var(--bad);font-weight:600;margin:4px 0}.field-error{color:var(--bad);font-size:.9rem;margin:4px 0 0}
.notice{border-left:4px solid var(--ok);background:#eaf5ec;padding:10px 14px;margin:0 0 16px}.alert{border-left:4px solid var(--bad);background:#fdecee;padding:10px 14px;margin:0 0 16px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.88rem;word-break:break-all}
.secret{background:var(--panel);padding:4px 8px;border-radius:4px;display:inline-block}
.flags{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:6px 18px;border:0;padding:0;margin:0}
.flag{display:flex;gap:8px;align-items:flex-start}.flag input{margin-top:5px;width:18px;height:18px;flex:none}.flag label{margin:0}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:.8rem;font-weight:600;border:1px solid currentColor}
.panel>h2:first-child{margin-top:0}
.s-open,.s-delivered,.s-enabled,.s-active{color:var(--ok)}.s-escalated,.s-pending{color:var(--warn)}.s-closed,.s-revoked{color:var(--muted)}.s-failed,.s-dead{color:var(--bad)}
.thread{list-style:none;padding:0;margin:0;display:flex;flex-direction:column;gap:8px}
.msg{max-width:80%;padding:8px 12px;border-radius:10px;border:1px solid var(--line)}.msg .meta{font-size:.8rem;color:var(--muted)}.msg p{margin:.2em 0;white-space:pre-wrap}
.msg.human{background:var(--human);align-self:flex-start}.msg.ai{background:var(--ai);align-self:flex-end}.msg.agent{background:var(--agent);align-self:flex-end}
.msg.note{background:var(--note);border-style:dashed;align-self:center}.msg.system{background:none;border:none;align-self:center;font-style:italic;color:var(--muted)}
.reply-meta{font-size:.8rem;color:var(--muted);margin-top:4px}
.grid2{display:grid;grid-template-columns:2fr 1fr;gap:16px}.grid2>*{min-width:0}@media (max-width:800px){.grid2{grid-template-columns:1fr}.msg{max-width:100%}main{padding:12px}}
.chart{width:100%;max-width:720px;height:auto}.legend{display:flex;gap:14px;font-size:.85rem;flex-wrap:wrap}.sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
.sw-ok{background:#1a7f37}.sw-bad{background:#cf222e}.sw-p50{background:#0b57d0}.sw-p99{background:#bf8700}
.pager{display:flex;gap:16px;margin-top:12px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
`

export const SCRIPT = `
"use strict";
(function () {
  var announce = function (text) { var el = document.getElementById("announce"); if (el) { el.textContent = ""; el.textContent = text; } };
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    var text = (source.value !== undefined ? source.value : source.textContent).trim();
    var done = function () { button.setAttribute("data-copied", "true"); announce("Copied"); var label = button.textContent; button.textContent = "Copied"; setTimeout(function () { button.textContent = label; }, 1500); };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, function () { fallback(); });
    else fallback();
    function fallback() { var area = document.createElement("textarea"); area.value = text; document.body.appendChild(area); area.select(); try { document.execCommand("copy"); } catch (e) {} area.remove(); done(); }
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var message = form.getAttribute("data-confirm");
    if (message && !window.confirm(message)) { event.preventDefault(); return; }
    // Sent once: a second click does not post it again (after the browser has taken the form's values).
    setTimeout(function () { form.querySelectorAll("button[type=submit]").forEach(function (b) { b.disabled = true; }); }, 0);
  });
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) document.querySelectorAll("button[type=submit]").forEach(function (b) { b.disabled = false; });
  });
  var live = function (region) {
    var source = new EventSource(region.getAttribute("data-live"));
    var status = document.getElementById(region.getAttribute("data-live-status") || "");
    source.addEventListener("open", function () { if (status) status.textContent = "Live"; });
    source.addEventListener("error", function () {
      if (status) status.textContent = source.readyState === 2 ? "Disconnected: reload the page to see changes" : "Reconnecting…";
    });
    source.addEventListener("fragment", function (event) {
      var update = JSON.parse(event.data);
      var template = document.createElement("template");
      template.innerHTML = update.html;
      var node = template.content.firstElementChild;
      if (!node) return;
      var existing = update.id ? document.getElementById(update.id) : null;
      if (existing) existing.replaceWith(node);
      else { var target = document.getElementById(update.target); if (target) { if (update.prepend) target.prepend(node); else target.appendChild(node); } }
      if (update.announce) announce(update.announce);
    });
  };
  document.querySelectorAll("[data-live]").forEach(live);
})();
`

const hash = (text: string) => crypto.createHash("sha256").update(text).digest("hex").slice(0, 12)

/** Changes whenever either asset does: pages ask for `?v=<this>`. */
export const ASSETS_VERSION = hash(STYLESHEET + SCRIPT)
