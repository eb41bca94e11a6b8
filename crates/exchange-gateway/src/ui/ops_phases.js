// The operator dashboard's instruments: each listing's status and trading
// phase, its reference price (the last trade, or what the listing or
// `POST /admin/instruments/{symbol}/reference_price` set after it), and
// during a call its indicative auction price. Public data: the
// listing from `GET /v1/instruments` (re-read every few seconds) and live
// phases from the `status` channel. A server that reports no phases shows
// the listings with the phase left blank.

import { $, el, getJson } from "./common.js";
import { StatusFeed, phaseClass, isCall, describeIndicative } from "./status.js";

const LISTING_POLL_MS = 5000;

const instruments = new Map();
/** symbol -> the latest `status` message. */
const statuses = new Map();

const feed = new StatusFeed({
  onStatus(message) {
    statuses.set(message.symbol, message);
    render();
  },
  onUnavailable() {
    render();
  },
});

function render() {
  const rows = Array.from(instruments.values()).map((i) => {
    const status = statuses.get(i.symbol);
    const phase = status ? status.phase : i.phase;
    const indicative = status && isCall(phase) ? describeIndicative(status.indicative) : "";
    return el(
      "tr",
      { "data-symbol": i.symbol },
      el("td", { class: "num" }, i.symbol),
      el("td", { "data-col": "status" }, i.status || "—"),
      el(
        "td",
        { "data-col": "phase" },
        phase ? el("span", { class: `badge phase ${phaseClass(phase)}`, "data-phase": phase }, phase.replace(/_/g, " ")) : "—",
      ),
      el("td", { class: "num", "data-col": "reference" }, i.reference_price || "—"),
      el("td", { class: "num", "data-col": "indicative" }, indicative),
    );
  });
  $("instruments").replaceChildren(
    ...(rows.length ? rows : [el("tr", {}, el("td", { colspan: 5, class: "empty" }, "No instrument is listed"))]),
  );
}

async function poll() {
  try {
    const listing = (await getJson("/v1/instruments")).instruments;
    instruments.clear();
    for (const i of listing) instruments.set(i.symbol, i);
    $("instruments-msg").textContent = "";
    const symbols = listing.map((i) => i.symbol);
    if (symbols.join() !== feed.symbols.join()) feed.follow(symbols);
    render();
  } catch (error) {
    $("instruments-msg").textContent = error.describe ? error.describe() : String(error);
  }
  setTimeout(poll, LISTING_POLL_MS);
}

poll();
