// The operator dashboard (/ops): polls GET /admin/status every second with
// the admin token the operator pasted (kept in this tab's session storage)
// and shows the node, its throughput and latencies, and their last minute.

import { $, el, micros, getJson, ApiError } from "./common.js";
import { SeriesChart } from "./charts.js";

const STORE = "exchange.admin_token";
const POLL_MS = 1000;

const ackChart = new SeriesChart($("ack-chart"));
const cpsChart = new SeriesChart($("cps-chart"));
let timer = null;

function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function token() {
  return sessionStorage.getItem(STORE);
}

function setConn(text, live) {
  const conn = $("conn");
  conn.textContent = text;
  conn.classList.toggle("live", live);
  conn.classList.toggle("down", !live);
}

const int = (n) => (n === null || n === undefined ? "—" : Number(n).toLocaleString());

function uptime(secs) {
  const h = Math.floor(secs / 3600);
  const m = Math.floor((secs % 3600) / 60);
  return `${h}h ${String(m).padStart(2, "0")}m ${String(secs % 60).padStart(2, "0")}s`;
}

function percentiles(prefix, p) {
  $(`${prefix}-p50`).textContent = p.count ? micros(p.p50) : "—";
  $(`${prefix}-p99`).textContent = p.count ? micros(p.p99) : "—";
  $(`${prefix}-p999`).textContent = p.count ? micros(p.p999) : "—";
  $(`${prefix}-max`).textContent = p.count ? micros(p.max) : "—";
  $(`${prefix}-count`).textContent = `${int(p.count)} samples`;
}

function render(s) {
  const role = s.role || "unknown";
  $("role").textContent = role;
  $("role").className = `badge ${role}`;
  // A gateway has no Raft state: it follows a replica's log, and its lag
  // is how far its mirror is behind that replica.
  const mirror = s.tier && s.tier !== "replica";
  // `nospace`: the replica's disk is full and it takes no writes until
  // space is freed (it clears by itself).
  const alarms = s.alarms || [];
  $("alarms").textContent = alarms.length ? alarms.join(", ") : "none";
  $("alarms").className = alarms.length ? "badge alarm" : "";
  $("tier").textContent = s.tier || "replica";
  $("following").textContent = mirror ? `${s.following || "no replica yet"} (leader ${s.leader ?? "unknown"})` : "—";
  $("node-id").textContent = mirror ? "—" : s.node_id ?? "—";
  $("term").textContent = int(s.term);
  $("commit").textContent = int(s.commit_index);
  $("applied").textContent = int(s.applied_index);
  $("lag").textContent = int(s.lag);
  $("hash").textContent = s.state_hash;
  $("hash").title = s.state_hash;
  $("hash-index").textContent = int(s.state_hash_index);
  $("uptime").textContent = uptime(s.uptime_secs);
  $("version").textContent = s.version;
  $("window").textContent = `last ${s.window_secs} s`;
  $("cps").textContent = s.commands_per_sec.toFixed(1);
  $("commands").textContent = int(s.commands_total);
  $("q-submit").textContent = int(s.queues.submit);
  $("q-core").textContent = int(s.queues.core);
  $("reporting").textContent =
    s.reporting_lag === null
      ? "n/a"
      : `${int(s.reporting_lag)} entries, ${(s.reporting_lag_seconds || 0).toFixed(3)} s`;
  const dead = s.reporting_dead_letters || 0;
  if (dead > 0) $("reporting").textContent += ` (ALARM: ${int(dead)} entries not recorded)`;
  $("reporting").classList.toggle("alarm", dead > 0);
  percentiles("ack", s.ack_latency_us);
  percentiles("fsync", s.fsync_latency_us);
  const md = s.marketdata;
  $("md-subs").textContent = md ? int(md.subscribers) : "n/a";
  $("md-msgs").textContent = md ? int(md.messages_total) : "n/a";
  $("md-slow").textContent = md ? int(md.slow_consumers_total) : "n/a";
  $("md-conflated").textContent = md ? int(md.conflated_total) : "n/a";
  $("md-resyncs").textContent = md ? int(md.resyncs_total) : "n/a";
  $("md-lag").textContent = md ? int(md.lag) : "n/a";
  const rejects = Object.entries(s.rejects).sort((a, b) => b[1] - a[1]);
  $("rejects").replaceChildren(
    ...(rejects.length
      ? rejects.map(([code, n]) => el("tr", {}, el("td", { class: "num" }, code), el("td", { class: "num" }, int(n))))
      : [el("tr", {}, el("td", { colspan: 2, class: "empty" }, "No rejects"))]),
  );
  $("nodes").replaceChildren(
    ...s.nodes.map((n) =>
      el(
        "tr",
        {},
        el("td", { class: "num" }, n.node_id),
        el("td", {}, el("span", { class: `badge ${n.role}` }, n.role)),
        el("td", { class: "num" }, int(n.term)),
        el("td", { class: "num" }, int(n.commit_index)),
        el("td", { class: "num" }, int(n.applied_index)),
        el("td", { class: "num" }, int(n.lag)),
      ),
    ),
  );
  const series = s.series;
  ackChart.set(
    [
      { color: css("--sell"), values: series.map((p) => p.ack_max_us) },
      { color: css("--warn"), values: series.map((p) => p.ack_p99_us) },
      { color: css("--accent"), values: series.map((p) => p.ack_p50_us) },
    ],
    (v) => micros(Math.round(v)),
  );
  cpsChart.set([{ color: css("--buy"), values: series.map((p) => p.commands), bars: true }], (v) => Math.round(v).toLocaleString());
}

async function poll() {
  const current = token();
  if (!current) return;
  try {
    const status = await getJson("/admin/status", { headers: { Authorization: `Bearer ${current}` } });
    $("ops-msg").textContent = "";
    setConn(`polling every ${POLL_MS / 1000} s`, true);
    render(status);
  } catch (error) {
    setConn("error", false);
    $("ops-msg").textContent = error instanceof ApiError ? error.describe() : String(error);
    if (error.status === 401) {
      // A wrong token is forgotten at once, so it can be pasted again.
      sessionStorage.removeItem(STORE);
      showForm();
      stop();
      return;
    }
  }
  if (timer !== null) timer = setTimeout(poll, POLL_MS);
}

/** Shows the token field, or only "Forget token" once one is kept. */
function showForm() {
  const kept = token() !== null;
  $("token").classList.toggle("hidden", kept);
  $("token-save").classList.toggle("hidden", kept);
  $("token-forget").classList.toggle("hidden", !kept);
}

function begin() {
  showForm();
  stop();
  timer = setTimeout(poll, 0);
}

function stop() {
  if (timer !== null) clearTimeout(timer);
  timer = null;
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = $("token").value.trim();
  if (!value) {
    $("ops-msg").textContent = "Paste the admin token (generated into DATA_DIR/admin_token unless set).";
    return;
  }
  sessionStorage.setItem(STORE, value);
  $("token").value = "";
  begin();
});

$("token-forget").addEventListener("click", () => {
  sessionStorage.removeItem(STORE);
  stop();
  showForm();
  setConn("not connected", false);
  $("token").focus();
});

if (token()) begin();
else $("token").focus();
