#include "actors/status/status_page.hpp"

#include "actors/status/status_page_charts.hpp"

namespace lifeboat {

namespace {

// One static document: styles, markup and the script that renders /status,
// with the pictures' sections and script (status_page_charts.cpp) between
// its parts. Every value from the JSON goes through textContent, never
// innerHTML, so an actor or path name can not inject markup.
constexpr const char* page_top = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>lifeboat status</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 24px; color: #1d2733; background: #f5f7fa; }
  h1 { font-size: 22px; margin: 0 0 16px 0; }
  h2 { font-size: 16px; margin: 24px 0 8px 0; }
  .cards { display: flex; gap: 12px; flex-wrap: wrap; }
  .card { background: #fff; border: 1px solid #d5dde6; border-radius: 6px; padding: 10px 14px; min-width: 120px; }
  .card .label { font-size: 12px; color: #5b6b7c; text-transform: uppercase; letter-spacing: 0.04em; }
  .card .value { font-size: 20px; font-weight: 600; margin-top: 4px; }
  table { border-collapse: collapse; background: #fff; border: 1px solid #d5dde6; min-width: 480px; }
  th, td { text-align: left; padding: 6px 12px; border-bottom: 1px solid #e6ebf0; }
  th { background: #eef2f6; font-size: 13px; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .ok { color: #17803d; } .warn { color: #b25e00; } .bad { color: #c0262d; }
  #error { color: #c0262d; margin-top: 12px; }
  .muted { color: #5b6b7c; }
  .chart { background: #fff; border: 1px solid #d5dde6; border-radius: 6px; display: block; }
  .chart .tick { font-size: 11px; fill: #5b6b7c; }
  .chart .legend { font-size: 12px; fill: #1d2733; }
  .chart .event { font-size: 10px; fill: #1d2733; }
  #preemption_message { margin-top: 8px; }
</style>
</head>
<body>
<h1>lifeboat <span class="muted" id="who">?</span></h1>
<div class="cards">
  <div class="card"><div class="label">phase</div><div class="value" id="phase">?</div></div>
  <div class="card"><div class="label">step</div><div class="value" id="step">?</div></div>
  <div class="card"><div class="label">health</div><div class="value" id="health">?</div></div>
  <div class="card"><div class="label">last checkpoint</div><div class="value" id="checkpoint">?</div></div>
  <div class="card" id="restored_card"><div class="label">restored at start</div><div class="value" id="restored">?</div></div>
  <div class="card" id="preemption_card"><div class="label">preemption watcher</div><div class="value" id="preemption">?</div></div>
</div>
<div class="muted" id="preemption_message"></div>
<div id="error"></div>
<h2>Actors</h2>
<table id="actors"><thead><tr><th>name</th><th>state</th><th>mailbox</th></tr></thead><tbody></tbody></table>
<h2>Workers</h2>
<table id="workers"><thead><tr><th>rank</th><th>step</th><th>last heartbeat</th><th>state</th><th>phase</th></tr></thead><tbody></tbody></table>
<p class="muted" id="no_workers">Workers are listed on the coordinator.</p>
)html";

constexpr const char* page_middle = R"html(
<p class="muted">Updated every second from <a href="/status">/status</a> &middot; <a href="/metrics">/metrics</a> &middot; <a href="/healthz">/healthz</a>. Last update: <span id="updated">never</span></p>
<script>
"use strict";
const good = new Set(["running", "alive", "idle", "training"]);
const bad = new Set(["unresponsive", "down", "error", "lost"]);

function stateClass(state) {
  if (bad.has(state)) return "bad";
  if (good.has(state)) return "ok";
  return "warn";
}

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = String(text);
  if (cls) td.className = cls;
  row.appendChild(td);
}

function fillRows(tableId, items, fill) {
  const body = document.querySelector("#" + tableId + " tbody");
  body.replaceChildren();
  for (const item of items) {
    const row = document.createElement("tr");
    fill(row, item);
    body.appendChild(row);
  }
}

function formatBytes(n) {
  if (n >= 1 << 30) return (n / (1 << 30)).toFixed(2) + " GiB";
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
  if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + " KiB";
  return n + " B";
}

function render(s) {
  // Rank -1 is the coordinator (the launcher or lifeboat-coordinator), no worker.
  document.getElementById("who").textContent = s.rank < 0
      ? "coordinator of " + s.world_size + " workers"
      : "rank " + s.rank + " of " + s.world_size;
  document.getElementById("phase").textContent = s.phase;
  document.getElementById("step").textContent = s.step;
  const health = document.getElementById("health");
  health.textContent = s.healthy ? "healthy" : "unhealthy";
  health.className = "value " + (s.healthy ? "ok" : "bad");
  const c = s.last_checkpoint;
  document.getElementById("checkpoint").textContent = c.path
      ? "step " + c.step + " \u00b7 " + formatBytes(c.bytes) +
        // A coordinator knows no seconds of the checkpoint the workers restored.
        (c.seconds > 0 ? " \u00b7 " + c.seconds.toFixed(2) + " s" : "") +
        (c.tiers && c.tiers.length > 0 ? " \u00b7 " + c.tiers.map((t) => t.name).join(" + ") : "")
      : "none yet";
  document.getElementById("checkpoint").title = c.path;
  // Right after a restart this worker has saved nothing yet: the checkpoint
  // it went on from says that no progress was lost.
  const r = s.restored;
  document.getElementById("restored_card").style.display = r && r.path ? "" : "none";
  document.getElementById("restored").textContent = r && r.path
      ? "step " + r.step + " \u00b7 " + formatBytes(r.bytes) + " \u00b7 from " +
        r.tiers.map((t) => t.name).join(", ") + " in " + r.seconds.toFixed(2) + " s"
      : "";
  document.getElementById("restored").title = r ? r.path : "";
  fillRows("actors", s.actors, (row, a) => {
    row.dataset.actor = a.name;
    cell(row, a.name);
    cell(row, a.state, stateClass(a.state));
    cell(row, a.mailbox, "num");
  });
  fillRows("workers", s.workers, (row, w) => {
    row.dataset.rank = w.rank;
    cell(row, w.rank, "num");
    cell(row, w.step, "num");
    cell(row, w.last_heartbeat_ms + " ms ago", "num");
    cell(row, w.state, stateClass(w.state));
    cell(row, w.phase, w.phase ? stateClass(w.phase) : "");
  });
  // Only a coordinator has a preemption watcher.
  const p = s.preemption;
  document.getElementById("preemption_card").style.display = p ? "" : "none";
  document.getElementById("preemption").textContent = p ? p.state : "";
  document.getElementById("preemption").className = "value " + (p && p.notice_rank >= 0 ? "warn" : "ok");
  document.getElementById("preemption_message").textContent = p && p.message ? "notice: " + p.message : "";
  document.getElementById("workers").style.display = s.workers.length ? "" : "none";
  document.getElementById("no_workers").style.display = s.workers.length ? "none" : "";
  document.getElementById("error").textContent = "";
  document.getElementById("updated").textContent = new Date().toLocaleTimeString();
}

async function refresh() {
  try {
    const response = await fetch("/status", {cache: "no-store"});
    if (!response.ok) throw new Error("HTTP " + response.status);
    render(await response.json());
  } catch (err) {
    document.getElementById("error").textContent = "status unavailable: " + err.message;
  }
}

refresh();
setInterval(refresh, 1000);
</script>
<script>
"use strict";
)html";

constexpr const char* page_bottom = R"html(</script>
</body>
</html>
)html";

}  // namespace

const std::string& status_page_html() {
  static const std::string html = std::string{page_top} + status_page_chart_sections() +
                                  page_middle + status_page_chart_script() + page_bottom;
  return html;
}

}  // namespace lifeboat
