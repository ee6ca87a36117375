// Self time of a V8 .cpuprofile (node --cpu-prof) by package and by function, for the samples in a window
// counted back from the end of the profile (the scenario's last phase runs just before Parley stops).
// node bench/profile-window.mjs FILE.cpuprofile [fromSecondsBeforeEnd] [toSecondsBeforeEnd] [topN]
import { readFileSync } from "node:fs"
const [file, fromS = "1e9", toS = "0", topN = "40"] = process.argv.slice(2)
const p = JSON.parse(readFileSync(file, "utf8"))
const byId = new Map(p.nodes.map((n) => [n.id, n]))
const times = []; let t = p.startTime
for (const d of p.timeDeltas) { t += d; times.push(t) }
const end = p.endTime
const lo = end - Number(fromS) * 1e6, hi = end - Number(toS) * 1e6
const self = new Map(); const cats = new Map(); let total = 0, idle = 0
const cat = (cf) => {
  const u = cf.url || ""
  if (cf.functionName === "(garbage collector)") return "gc"
  if (cf.functionName === "(program)") return "program"
  if (cf.functionName === "(idle)") return "idle"
  const m = u.match(/node_modules\/((@[^/]+\/)?[^/]+)/)
  if (m) return m[1]
  if (u.startsWith("node:") || u === "") return "node:" + (cf.functionName || "native")
  if (u.includes("/dist/")) return "parley"
  return u
}
for (let i = 0; i < p.samples.length; i++) {
  if (times[i] < lo || times[i] > hi) continue
  const n = byId.get(p.samples[i]); const cf = n.callFrame
  const dt = (p.timeDeltas[i + 1] ?? 0)
  if (cf.functionName === "(idle)") { idle += dt; continue }
  total += dt
  const key = `${cf.functionName || "(anon)"} ${(cf.url || "").replace(/.*node_modules\//, "").replace(/.*\/dist\//, "dist/")}:${cf.lineNumber}`
  self.set(key, (self.get(key) ?? 0) + dt)
  const c = cat(cf); cats.set(c, (cats.get(c) ?? 0) + dt)
}
console.log(`window busy ${(total / 1e3).toFixed(0)} ms, idle ${(idle / 1e3).toFixed(0)} ms`)
for (const [k, v] of [...cats].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${(100 * v / total).toFixed(1).padStart(5)}%  ${k}`)
console.log("--- top self")
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(topN))) console.log(`${(100 * v / total).toFixed(1).padStart(5)}%  ${k}`)
