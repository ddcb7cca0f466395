#include "actors/status/status_page_charts.hpp"

namespace lifeboat {

namespace {

constexpr const char* sections = R"html(
<h2>Steps per second</h2>
<svg id="rates" class="chart" width="760" height="220" role="img" aria-label="steps per second per rank"></svg>
<p class="muted" id="no_rates">Steps per second of every rank are drawn on the coordinator.</p>
<h2>Last decision</h2>
<svg id="timeline" class="chart" width="760" height="60" role="img" aria-label="the last preemption decision"></svg>
<p class="muted" id="no_timeline">No preemption yet.</p>
<h2>Checkpoints</h2>
<svg id="checkpoint_bars" class="chart" width="760" height="150" role="img" aria-label="checkpoint seconds"></svg>
<table id="checkpoints"><thead><tr><th>generation</th><th>step</th><th>seconds</th><th>MB/s</th><th>shards</th><th>kind</th></tr></thead><tbody></tbody></table>
<p class="muted" id="no_checkpoints">No checkpoint yet.</p>
)html";

// Plain SVG through createElementNS: no library, no font, works offline.
constexpr const char* script = R"js(
const svgNs = "http://www.w3.org/2000/svg";
const palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];
const eventColors = {"notice": "#c0262d", "query": "#1f77b4", "report": "#17becf",
  "agreement": "#9467bd", "snapshot": "#ff7f0e", "shard durable": "#2ca02c", "commit": "#17803d",
  "exit": "#1d2733"};

function el(parent, name, attrs, text) {
  const node = document.createElementNS(svgNs, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = String(text);
  parent.appendChild(node);
  return node;
}

function show(id, visible) { document.getElementById(id).style.display = visible ? "" : "none"; }

function niceMax(x) {
  if (!(x > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

function axes(svg, left, top, w, h, yMax, yLabel) {
  el(svg, "line", {x1: left, y1: top + h, x2: left + w, y2: top + h, stroke: "#9aa7b4"});
  el(svg, "line", {x1: left, y1: top, x2: left, y2: top + h, stroke: "#9aa7b4"});
  for (const f of [0, 0.5, 1]) {
    const y = top + h - f * h;
    el(svg, "text", {x: left - 6, y: y + 4, "text-anchor": "end", class: "tick"}, +(f * yMax).toFixed(2));
    if (f > 0) el(svg, "line", {x1: left, y1: y, x2: left + w, y2: y, stroke: "#e6ebf0"});
  }
  el(svg, "text", {x: left, y: top - 8, class: "tick"}, yLabel);
}

function drawRates(r) {
  const svg = document.getElementById("rates");
  svg.replaceChildren();
  const have = r.ranks.length > 0 && r.unix_ms.length > 1;
  show("rates", have); show("no_rates", !have);
  if (!have) return;
  const left = 48, top = 24, w = 560, h = 160;
  let yMax = 0;
  for (const lane of r.ranks) for (const v of lane.steps_per_s) yMax = Math.max(yMax, v);
  yMax = niceMax(yMax);
  axes(svg, left, top, w, h, yMax, "steps/s");
  const t0 = r.unix_ms[0], t1 = r.unix_ms[r.unix_ms.length - 1];
  const span = Math.max(1, t1 - t0);
  el(svg, "text", {x: left, y: top + h + 16, class: "tick"}, "-" + Math.round(span / 1000) + " s");
  el(svg, "text", {x: left + w, y: top + h + 16, "text-anchor": "end", class: "tick"}, "now");
  r.ranks.forEach((lane, i) => {
    const color = palette[i % palette.length];
    const points = lane.steps_per_s.map((v, k) =>
        (left + (r.unix_ms[k] - t0) / span * w).toFixed(1) + "," + (top + h - v / yMax * h).toFixed(1));
    el(svg, "polyline", {points: points.join(" "), fill: "none", stroke: color, "stroke-width": 2,
                         "data-rank": lane.rank});
    const last = lane.steps_per_s[lane.steps_per_s.length - 1];
    const y = top + 14 + i * 18;
    el(svg, "rect", {x: left + w + 16, y: y - 9, width: 10, height: 10, fill: color});
    el(svg, "text", {x: left + w + 32, y: y, class: "legend", "data-rank": lane.rank},
       "rank " + lane.rank + ": " + last.toFixed(1) + " /s");
  });
}

function drawTimeline(t) {
  const svg = document.getElementById("timeline");
  svg.replaceChildren();
  const have = t.lanes.length > 0;
  show("timeline", have); show("no_timeline", !have);
  if (!have) return;
  const left = 70, top = 34, laneH = 54, w = 660;
  svg.setAttribute("height", top + laneH * t.lanes.length + 24);
  let msMax = 1;
  for (const lane of t.lanes) for (const e of lane.events) msMax = Math.max(msMax, e.ms);
  const x = ms => left + Math.max(0, ms) / msMax * w;
  el(svg, "text", {x: left, y: 14, class: "tick"},
     "generation " + t.generation + ", ms from the first notice (" + new Date(t.notice_unix_ms).toLocaleTimeString() + ")");
  t.lanes.forEach((lane, i) => {
    const y = top + i * laneH + laneH / 2;
    const g = el(svg, "g", {"data-lane": lane.rank});
    el(g, "text", {x: 8, y: y + 4, class: "legend"}, "rank " + lane.rank);
    el(g, "line", {x1: left, y1: y, x2: left + w, y2: y, stroke: "#d5dde6"});
    // Events a few pixels apart share one label, alternately above and below.
    const clusters = [];
    for (const e of lane.events) {
      const color = eventColors[e.event] || "#5b6b7c";
      const m = el(g, "circle", {cx: x(e.ms), cy: y, r: 5, fill: color, "data-event": e.event});
      el(m, "title", {}, e.event + " at " + e.ms.toFixed(0) + " ms" + (e.step >= 0 ? ", step " + e.step : ""));
      const last = clusters[clusters.length - 1];
      if (last && x(e.ms) - last.x < 90) last.parts.push(e.event + " " + e.ms.toFixed(0));
      else clusters.push({x: x(e.ms), parts: [e.event + " " + e.ms.toFixed(0)]});
    }
    clusters.forEach((c, k) => {
      const anchor = c.x > left + w - 120 ? "end" : "start";
      el(g, "text", {x: c.x, y: k % 2 === 0 ? y - 10 : y + 19, "text-anchor": anchor, class: "event"},
         c.parts.join(", ") + " ms");
    });
  });
  el(svg, "text", {x: left + w, y: top + laneH * t.lanes.length + 16, "text-anchor": "end", class: "tick"},
     msMax.toFixed(0) + " ms");
}

function drawCheckpoints(c) {
  const list = c.checkpoints;
  const svg = document.getElementById("checkpoint_bars");
  svg.replaceChildren();
  show("checkpoint_bars", list.length > 0); show("checkpoints", list.length > 0);
  show("no_checkpoints", list.length === 0);
  fillRows("checkpoints", list, (row, k) => {
    row.dataset.step = k.step;
    row.dataset.kind = k.after_notice ? "after notice" : "backup";
    cell(row, k.generation, "num");
    cell(row, k.step, "num");
    cell(row, k.seconds.toFixed(3), "num");
    cell(row, k.mb_per_s.toFixed(1), "num");
    cell(row, k.shards, "num");
    cell(row, k.after_notice ? "after notice" : "backup", k.after_notice ? "warn" : "");
  });
  if (list.length === 0) return;
  const left = 48, top = 20, w = 660, h = 100;
  let yMax = 0;
  for (const k of list) yMax = Math.max(yMax, k.seconds);
  yMax = niceMax(yMax);
  axes(svg, left, top, w, h, yMax, "seconds");
  const bw = Math.min(40, w / list.length - 4);
  list.forEach((k, i) => {
    const bh = k.seconds / yMax * h;
    const bx = left + 4 + i * (bw + 4);
    const bar = el(svg, "rect", {x: bx, y: top + h - bh, width: bw, height: Math.max(1, bh),
                                 fill: k.after_notice ? "#ff7f0e" : "#8fa9c4", "data-step": k.step});
    el(bar, "title", {}, "step " + k.step + ": " + k.seconds.toFixed(3) + " s, " + k.mb_per_s.toFixed(1) + " MB/s");
    el(svg, "text", {x: bx + bw / 2, y: top + h + 14, "text-anchor": "middle", class: "tick"}, k.step);
  });
  el(svg, "rect", {x: left + w - 190, y: 2, width: 10, height: 10, fill: "#8fa9c4"});
  el(svg, "text", {x: left + w - 176, y: 11, class: "tick"}, "backup");
  el(svg, "rect", {x: left + w - 120, y: 2, width: 10, height: 10, fill: "#ff7f0e"});
  el(svg, "text", {x: left + w - 106, y: 11, class: "tick"}, "after notice");
}

// 404: this endpoint was given no history (history_routes.hpp); it draws none.
async function fetchJson(path) {
  const response = await fetch(path, {cache: "no-store"});
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(path + ": HTTP " + response.status);
  return response.json();
}

async function refreshCharts() {
  try {
    const [r, t, c] = await Promise.all([fetchJson("/rates"), fetchJson("/timeline"), fetchJson("/checkpoints")]);
    if (r === null || t === null || c === null) return;
    drawRates(r);
    drawTimeline(t);
    drawCheckpoints(c);
  } catch (err) {
    document.getElementById("error").textContent = "history unavailable: " + err.message;
  }
}

refreshCharts();
setInterval(refreshCharts, 1000);
)js";

}  // namespace

const char* status_page_chart_sections() { return sections; }

const char* status_page_chart_script() { return script; }

}  // namespace lifeboat
