#include "server/dashboard.h"

namespace mtplx::server {

const char* DashboardHtml() {
  return R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mtplx dashboard</title>
<link rel="icon" href="data:,">
<style>
  :root { --fg: #1d2330; --muted: #667085; --line: #e4e7ec; --accent: #2f6fde; --bg: #f8f9fb; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
  header { padding: 14px 20px; border-bottom: 1px solid var(--line); background: #fff;
           display: flex; justify-content: space-between; align-items: baseline; }
  h1 { font-size: 18px; margin: 0; }
  #status { color: var(--muted); }
  main { padding: 16px 20px; display: grid; gap: 14px;
         grid-template-columns: repeat(auto-fit, minmax(230px, 1fr)); }
  .card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
  .card h2 { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted);
             margin: 0 0 6px; font-weight: 600; }
  .big { font-size: 28px; font-weight: 600; }
  .sub { color: var(--muted); }
  .wide { grid-column: 1 / -1; }
  .bar { height: 10px; background: var(--line); border-radius: 5px; overflow: hidden; margin: 3px 0 8px; }
  .bar > div { height: 100%; background: var(--accent); }
  table { border-collapse: collapse; width: 100%; }
  td { padding: 2px 4px; }
  svg { width: 100%; height: 180px; display: block; }
</style>
</head>
<body>
<header><h1>mtplx</h1><span id="status">connecting…</span></header>
<main>
  <section class="card"><h2>Throughput</h2>
    <div class="big"><span id="tok-s">0.0</span> tok/s</div>
    <div class="sub">all requests, last seconds · per stream <span id="stream-tok-s">0.0</span> tok/s</div></section>
  <section class="card"><h2>Slots</h2>
    <div class="big"><span id="slots-busy">0</span> / <span id="slots-total">0</span></div>
    <div class="sub">decoding now · <span id="queue">0</span> waiting</div></section>
  <section class="card"><h2>Requests</h2>
    <div class="big" id="requests">0</div>
    <div class="sub"><span id="generated">0</span> tokens generated · <span id="failed">0</span> failed ·
      <span id="refused">0</span> refused (memory)</div></section>
  <section class="card"><h2>Prefix cache</h2>
    <div class="big" id="cache-hit">0%</div>
    <div class="sub">of prompt tokens restored · <span id="cache-entries">0</span> entries,
      <span id="cache-bytes">0 B</span></div></section>
  <section class="card wide"><h2>Tokens per second over time</h2>
    <svg id="chart" viewBox="0 0 600 180" preserveAspectRatio="none" role="img"
         aria-label="tokens per second over time"></svg></section>
  <section class="card"><h2>Speculation</h2>
    <div class="sub">depth <span id="depth">0</span> · <span id="tpc">0.00</span> tokens per cycle ·
      <span id="cycles">0</span> cycles</div>
    <table id="acceptance"></table></section>
  <section class="card"><h2>Memory</h2><div id="memory"></div></section>
  <section class="card"><h2>Time to first token</h2>
    <div class="big"><span id="ttft">–</span></div>
    <div class="sub">mean over <span id="ttft-count">0</span> requests</div></section>
</main>
<script>
"use strict";
const key = new URLSearchParams(location.hash.slice(1)).get("key");
const $ = (id) => document.getElementById(id);
function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n.toFixed(0)) + " " + units[i];
}
function bar(label, value, total) {
  const share = total > 0 ? Math.min(100, 100 * value / total) : 0;
  return `<div>${label}: ${bytes(value)}</div><div class="bar"><div style="width:${share}%"></div></div>`;
}
function chart(history) {
  const svg = $("chart");
  if (history.length < 2) { svg.innerHTML = ""; return; }
  const t0 = history[0][0], t1 = history[history.length - 1][0];
  const top = Math.max(1, ...history.map((p) => p[1])) * 1.1;
  const x = (t) => (t1 > t0 ? 600 * (t - t0) / (t1 - t0) : 0);
  const y = (v) => 175 - 170 * v / top;
  const line = history.map((p, i) => (i ? "L" : "M") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(" ");
  svg.innerHTML = `<path d="${line} L600,175 L0,175 Z" fill="#2f6fde22" stroke="none"/>` +
    `<path d="${line}" fill="none" stroke="#2f6fde" stroke-width="2" vector-effect="non-scaling-stroke"/>` +
    `<text x="4" y="12" font-size="11" fill="#667085">${top.toFixed(0)} tok/s</text>`;
}
function render(s) {
  $("tok-s").textContent = s.throughput.tok_s.toFixed(1);
  $("stream-tok-s").textContent = s.throughput.stream_tok_s.toFixed(1);
  $("slots-busy").textContent = s.slots.busy;
  $("slots-total").textContent = s.slots.total;
  $("queue").textContent = s.slots.queued;
  const finished = Object.values(s.requests.finished).reduce((a, b) => a + b, 0);
  $("requests").textContent = finished;
  $("generated").textContent = s.tokens.generated;
  $("failed").textContent = s.requests.failed;
  $("refused").textContent = s.requests.refused_memory;
  const hit = s.tokens.prompt > 0 ? 100 * s.tokens.cached / s.tokens.prompt : 0;
  $("cache-hit").textContent = hit.toFixed(0) + "%";
  $("cache-entries").textContent = s.cache.entries;
  $("cache-bytes").textContent = bytes(s.cache.bytes);
  $("depth").textContent = s.speculation.depth;
  $("tpc").textContent = s.speculation.tokens_per_cycle.toFixed(2);
  $("cycles").textContent = s.speculation.cycles;
  $("acceptance").innerHTML = s.speculation.acceptance.map((a) =>
    `<tr><td>depth ${a.depth}</td><td>${(100 * a.conditional).toFixed(0)}%</td>` +
    `<td class="sub">${(100 * a.unconditional).toFixed(0)}% of cycles</td></tr>`).join("");
  const m = s.memory;
  $("memory").innerHTML = `<div class="sub">budget ${bytes(m.budget_bytes)}</div>` +
    bar("model", m.model_bytes, m.budget_bytes) + bar("requests", m.requests_bytes, m.budget_bytes) +
    bar("prefix cache", m.cache_bytes, m.budget_bytes);
  $("ttft").textContent = s.ttft.count ? (1000 * s.ttft.mean_s).toFixed(0) + " ms" : "–";
  $("ttft-count").textContent = s.ttft.count;
  chart(s.throughput.history);
}
async function poll() {
  try {
    const response = await fetch("/v1/mtplx/stats", { headers: key ? { "x-api-key": key } : {} });
    if (!response.ok) throw new Error("HTTP " + response.status);
    render(await response.json());
    $("status").textContent = "live · updated " + new Date().toLocaleTimeString();
  } catch (e) {
    $("status").textContent = "disconnected (" + e.message + "); retrying";
  }
  setTimeout(poll, 500);
}
poll();
</script>
</body>
</html>
)HTML";
}

}  // namespace mtplx::server
