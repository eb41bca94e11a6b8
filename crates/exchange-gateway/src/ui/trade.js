// The trading screen (/): wires the market feed, the charts and the
// account to the page. Nothing here decides anything the exchange has
// not said: the book, trades and candles are what the channels sent, and
// every order change is the server's answer to a signed request.

import { $, el, fmt, decimalsOf, clock, compact, throttled, getJson } from "./common.js";
import { MarketFeed } from "./market.js";
import { CandleChart, DepthChart } from "./charts.js";
import { Account } from "./orders.js";
import { updateEntryFields, watchEntryFields, orderBody, EntryError } from "./entry.js";
import { StatusFeed, renderPhase } from "./status.js";

const BOOK_ROWS = 40;
const DEPTH_LEVELS = 60;
const TAPE_ROWS = 60;

const state = {
  instruments: new Map(),
  symbol: null,
  interval: "1m",
  trades: [],
  candles: [],
  lastPrice: null,
  centered: false,
};

const candleChart = new CandleChart($("candles"));
const depthChart = new DepthChart($("depth"));

function instrument() {
  return state.instruments.get(state.symbol) || { tick_size: "0.01", lot_size: "0.0001", base: "", quote: "" };
}
const priceDp = () => decimalsOf(instrument().tick_size);
const qtyDp = () => decimalsOf(instrument().lot_size);

// ---------- market data ----------

const feed = new MarketFeed({
  onState(text, live) {
    const conn = $("conn");
    conn.textContent = text;
    conn.classList.toggle("live", live);
    conn.classList.toggle("down", !live && text !== "connecting");
  },
  onBook: () => renderBook(),
  onTrade(message) {
    addTrades([message]);
  },
  onTicker: renderTicker,
  onCandle(message) {
    upsertCandle(message);
  },
  onResync(count) {
    $("book-resyncs").textContent = `resyncs ${count}`;
    $("book-status").textContent = "gap detected: resyncing";
  },
});

// The instrument's trading phase and, during a call, its indicative price.
const statusFeed = new StatusFeed({
  onStatus(message) {
    if (message.symbol === state.symbol) renderPhase($("phase"), $("indicative"), message);
  },
  onUnavailable() {
    const inst = instrument();
    if (!inst.phase) renderPhase($("phase"), $("indicative"), null);
  },
});

const renderBook = throttled(() => {
  const book = feed.book;
  if (!book || !book.synced) return;
  const pdp = priceDp();
  const qdp = qtyDp();
  const mine = new Set(
    account.orders.filter((o) => o.symbol === state.symbol).map((o) => `${o.side}:${Number(o.price)}`),
  );
  const asks = book.levels("sell", BOOK_ROWS);
  const bids = book.levels("buy", BOOK_ROWS);
  const cumulative = (levels) => {
    let sum = 0;
    return levels.map(([p, q]) => [p, q, (sum += Number(q))]);
  };
  const ca = cumulative(asks);
  const cb = cumulative(bids);
  const max = Math.max(ca.length ? ca[ca.length - 1][2] : 0, cb.length ? cb[cb.length - 1][2] : 0) || 1;
  const rows = (levels, side) =>
    levels.map(([price, qty, total]) => {
      const bar = el("span", { class: "bar" });
      bar.style.width = `${(100 * total) / max}%`;
      return el(
        "button",
        {
          type: "button",
          // Forty levels a side would be eighty Tab stops before the
          // orders: the price field takes typing instead.
          tabindex: "-1",
          class: mine.has(`${side}:${Number(price)}`) ? "row mine" : "row",
          "data-price": price,
          "aria-label": `${side === "buy" ? "bid" : "ask"} ${price} size ${qty}`,
        },
        bar,
        el("span", { class: "price" }, fmt(price, pdp)),
        el("span", {}, fmt(qty, qdp)),
        el("span", {}, total.toFixed(qdp)),
      );
    });
  $("asks").replaceChildren(...rows(ca, "sell"));
  $("bids").replaceChildren(...rows(cb, "buy"));
  const bestBid = bids.length ? Number(bids[0][0]) : null;
  const bestAsk = asks.length ? Number(asks[0][0]) : null;
  $("spread-v").textContent =
    bestBid !== null && bestAsk !== null
      ? `${(bestAsk - bestBid).toFixed(pdp)}  (${(((bestAsk - bestBid) / bestAsk) * 10000).toFixed(1)} bp)`
      : "—";
  $("book-seq").textContent = `seq ${book.sequence}`;
  $("book-status").textContent = "live";
  if (!state.centered) {
    state.centered = true;
    const scroll = $("book-scroll");
    const spread = $("spread");
    scroll.scrollTop = spread.offsetTop - scroll.offsetTop - scroll.clientHeight / 2;
  }
  depthChart.set(
    book.levels("buy", DEPTH_LEVELS).map(([p, q]) => [Number(p), Number(q)]),
    book.levels("sell", DEPTH_LEVELS).map(([p, q]) => [Number(p), Number(q)]),
    pdp,
  );
});

function renderTicker(t) {
  const pdp = priceDp();
  const last = $("t-last");
  if (t.last_price !== null) {
    const price = Number(t.last_price);
    if (state.lastPrice !== null && price !== state.lastPrice) {
      last.classList.toggle("up", price > state.lastPrice);
      last.classList.toggle("down", price < state.lastPrice);
    }
    state.lastPrice = price;
  }
  last.textContent = fmt(t.last_price, pdp);
  $("t-bid").textContent = fmt(t.best_bid, pdp);
  $("t-ask").textContent = fmt(t.best_ask, pdp);
  $("t-spread").textContent =
    t.best_bid !== null && t.best_ask !== null ? (Number(t.best_ask) - Number(t.best_bid)).toFixed(pdp) : "—";
  $("t-vol").textContent = t.volume_24h === null ? "—" : `${compact(Number(t.volume_24h))} ${instrument().base}`;
  document.title = `${t.last_price === null ? "" : fmt(t.last_price, pdp) + " "}${state.symbol} — Exchange`;
}

function addTrades(trades) {
  const known = new Set(state.trades.map((t) => t.trade_id));
  const fresh = trades.filter((t) => t.symbol === undefined || t.symbol === state.symbol).filter((t) => !known.has(t.trade_id));
  if (!fresh.length) return;
  state.trades = state.trades.concat(fresh).sort((a, b) => b.trade_id - a.trade_id).slice(0, TAPE_ROWS);
  renderTape();
}

const renderTape = throttled(() => {
  const pdp = priceDp();
  const qdp = qtyDp();
  $("tape").replaceChildren(
    ...state.trades.map((t) =>
      el(
        "tr",
        { "data-trade-id": t.trade_id },
        el("td", { class: "muted" }, clock(t.time ?? t.ts)),
        el("td", { class: t.side === "buy" ? "buy" : "sell" }, fmt(t.price, pdp)),
        el("td", {}, fmt(t.qty, qdp)),
      ),
    ),
  );
});

function candleOf(c) {
  return {
    start: Number(c.start) / 1e6,
    open: Number(c.open),
    high: Number(c.high),
    low: Number(c.low),
    close: Number(c.close),
    volume: Number(c.volume),
  };
}

function upsertCandle(message) {
  const candle = candleOf(message);
  const i = state.candles.findIndex((c) => c.start === candle.start);
  if (i >= 0) state.candles[i] = candle;
  else {
    state.candles.push(candle);
    state.candles.sort((a, b) => a.start - b.start);
  }
  candleChart.set(state.candles, priceDp(), state.interval);
}

/** Recent candles over REST; without the endpoint, the channel alone fills the chart. */
async function loadCandles(symbol, interval) {
  try {
    const answer = await getJson(`/v1/markets/${encodeURIComponent(symbol)}/candles?interval=${interval}&limit=300`);
    if (symbol !== state.symbol || interval !== state.interval) return;
    const live = state.candles;
    state.candles = answer.candles.map(candleOf).reverse();
    for (const c of live) {
      const i = state.candles.findIndex((x) => x.start === c.start);
      if (i >= 0) state.candles[i] = c;
      else state.candles.push(c);
    }
    state.candles.sort((a, b) => a.start - b.start);
  } catch {
    // No history: the candles channel still draws from now on.
  }
  candleChart.set(state.candles, priceDp(), state.interval);
}

async function loadTrades(symbol) {
  try {
    const answer = await getJson(`/v1/markets/${encodeURIComponent(symbol)}/trades?limit=${TAPE_ROWS}`);
    if (symbol === state.symbol) addTrades(answer.trades);
  } catch {
    // The trades channel fills the tape from now on.
  }
}

function show(symbol) {
  state.symbol = symbol;
  state.trades = [];
  state.candles = [];
  state.lastPrice = null;
  state.centered = false;
  const inst = instrument();
  $("o-quote").textContent = inst.quote ? `(${inst.quote})` : "";
  $("o-base").textContent = inst.base ? `(${inst.base})` : "";
  $("o-funds-asset").textContent = inst.quote ? `(${inst.quote})` : "";
  // The listing's phase until the status channel says more; none on a
  // server that does not report phases.
  renderPhase($("phase"), $("indicative"), inst.phase ? { phase: inst.phase, indicative: null } : null);
  statusFeed.follow([symbol]);
  $("o-price").dataset.placeholder = Number(0).toFixed(priceDp());
  $("o-price").placeholder = $("o-price").dataset.placeholder;
  $("o-qty").placeholder = Number(inst.lot_size).toFixed(qtyDp());
  $("asks").replaceChildren();
  $("bids").replaceChildren();
  $("tape").replaceChildren();
  $("book-status").textContent = "waiting for snapshot";
  updateSubmitLabel();
  candleChart.set([], priceDp(), state.interval);
  depthChart.set([], [], priceDp());
  const url = new URL(location.href);
  url.searchParams.set("symbol", symbol);
  history.replaceState(null, "", url);
  feed.show(symbol, state.interval);
  loadTrades(symbol);
  loadCandles(symbol, state.interval);
}

// ---------- account ----------

const account = new Account({
  onData({ orders, fills, balances, accountId }) {
    $("account-id").textContent = accountId ? `account ${accountId}` : "";
    renderOrders(orders);
    renderFills(fills);
    renderBalances(balances);
    renderBook();
  },
  onState(text) {
    $("c-msg").className = "msg ok";
    $("c-msg").textContent = `connected: ${text}`;
  },
  onError(error) {
    const text = error.describe ? error.describe() : String(error);
    // A refused key is the Account panel's business.
    if (error.status === 401) message("c-msg", text, false);
    else $("orders-msg").textContent = text;
  },
});

function renderOrders(orders) {
  $("orders-msg").textContent = "";
  const body = $("orders");
  if (!account.connected) {
    body.replaceChildren(el("tr", {}, el("td", { colspan: 11, class: "empty" }, "Connect an API key to see your orders")));
    return;
  }
  if (!orders.length) {
    body.replaceChildren(el("tr", {}, el("td", { colspan: 11, class: "empty" }, "No open orders")));
    return;
  }
  body.replaceChildren(
    ...orders.map((o) => {
      const inst = state.instruments.get(o.symbol) || instrument();
      const pdp = decimalsOf(inst.tick_size);
      const qdp = decimalsOf(inst.lot_size);
      // An order's rarer fields (stop, trailing, display, expiry) come with
      // it from `GET /v1/orders`, each only when set.
      const d = o;
      const waiting = isStop(o) && o.triggered_ts === undefined;
      return el(
        "tr",
        { "data-order-id": o.order_id, "data-client-order-id": o.client_order_id, "data-type": o.type },
        el("td", { class: "num muted hide-narrow" }, clock(o.created_ts)),
        el("td", {}, o.symbol),
        el("td", { class: o.side }, o.side),
        el("td", { class: "left" }, (o.type || "limit").replace("_", " ")),
        el("td", { class: "num" }, o.price === null ? "market" : fmt(o.price, pdp)),
        el("td", { class: "num", "data-col": "stop" }, stopText(o, d, pdp)),
        el(
          "td",
          { class: "num", "data-col": "qty" },
          fmt(o.qty, qdp),
          d.display_qty ? el("span", { class: "sub muted", "data-col": "display" }, `shows ${fmt(d.display_qty, qdp)}`) : null,
          d.hidden ? el("span", { class: "sub muted", "data-col": "hidden" }, "hidden") : null,
        ),
        el("td", { class: "num hide-narrow" }, fmt(o.filled_qty, qdp)),
        el("td", { class: "left hide-narrow", "data-col": "tif" }, tifText(o, d)),
        el("td", { class: waiting ? "left waiting" : "left", "data-col": "status" }, waiting ? "waiting for trigger" : o.status.replace("_", " ")),
        el(
          "td",
          {},
          el("button", { type: "button", class: "small", "data-action": "amend", onclick: () => openAmend(o) }, "Amend"),
          " ",
          el("button", { type: "button", class: "small danger", "data-action": "cancel", onclick: (e) => cancelOrder(o, e.currentTarget) }, "Cancel"),
        ),
      );
    }),
  );
}

const isStop = (o) => ["stop", "stop_limit", "market_if_touched", "limit_if_touched"].includes(o.type);

/** A stop's trigger: its price, or its trailing distance. */
function stopText(o, d, pdp) {
  if (!isStop(o)) return "";
  if (d.trailing_bps) return `trail ${d.trailing_bps} bp`;
  if (d.trailing_amount) return `trail ${fmt(d.trailing_amount, pdp)}`;
  return d.stop_price ? fmt(d.stop_price, pdp) : "—";
}

/** The time in force, with a good-till-date order's expiry. */
function tifText(o, d) {
  const tif = (o.tif || "").replace("_", " ");
  if (o.tif !== "gtd" || !d.expire_ts) return tif;
  const when = new Date(Number(d.expire_ts) / 1e6);
  const today = when.toDateString() === new Date().toDateString();
  return `gtd until ${today ? "" : when.toLocaleDateString() + " "}${when.toLocaleTimeString([], { hour12: false })}`;
}

function renderFills(fills) {
  const body = $("fills");
  if (!fills.length) {
    body.replaceChildren(el("tr", {}, el("td", { colspan: 7, class: "empty" }, account.connected ? "No fills yet" : "Connect an API key to see your fills")));
    return;
  }
  body.replaceChildren(
    ...fills.map((f) => {
      const inst = state.instruments.get(f.symbol) || instrument();
      return el(
        "tr",
        {},
        el("td", { class: "num muted" }, clock(f.ts)),
        el("td", {}, f.symbol),
        el("td", { class: f.side }, f.side),
        el("td", { class: "num" }, fmt(f.price, decimalsOf(inst.tick_size))),
        el("td", { class: "num" }, fmt(f.qty, decimalsOf(inst.lot_size))),
        el("td", { class: "num" }, f.fee),
        el("td", { class: "left" }, f.liquidity),
      );
    }),
  );
}

function renderBalances(balances) {
  const body = $("balances");
  if (!balances.length) {
    body.replaceChildren(el("tr", {}, el("td", { colspan: 3, class: "empty" }, account.connected ? "No balances" : "Not connected")));
    return;
  }
  body.replaceChildren(
    ...balances.map((b) =>
      el("tr", { "data-asset": b.asset }, el("td", {}, b.asset), el("td", {}, compactAmount(b.total)), el("td", {}, compactAmount(b.available))),
    ),
  );
}

function compactAmount(text) {
  const n = Number(text);
  return Number.isFinite(n) ? n.toLocaleString(undefined, { maximumFractionDigits: 4 }) : text;
}

async function cancelOrder(order, button) {
  button.disabled = true;
  try {
    await account.cancel(order.order_id);
    $("orders-msg").textContent = "";
  } catch (error) {
    $("orders-msg").textContent = `cancel ${order.order_id}: ${error.describe ? error.describe() : error}`;
    button.disabled = false;
  }
}

let amending = null;

function openAmend(order) {
  amending = order;
  $("amend-id").textContent = `#${order.order_id}`;
  $("a-price").value = order.price ?? "";
  $("a-qty").value = order.qty;
  $("a-msg").textContent = "";
  $("amend").showModal();
  $("a-price").focus();
}

$("a-cancel").addEventListener("click", () => $("amend").close());
$("amend-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  if (!amending) return;
  const changes = {};
  const price = $("a-price").value.trim();
  const qty = $("a-qty").value.trim();
  if (price && price !== amending.price) changes.price = price;
  if (qty && qty !== amending.qty) changes.qty = qty;
  try {
    await account.amend(amending.order_id, changes);
    $("amend").close();
  } catch (error) {
    $("a-msg").textContent = error.describe ? error.describe() : String(error);
  }
});

// ---------- order entry ----------

function side() {
  return document.querySelector("input[name=side]:checked").value;
}

function updateSubmitLabel() {
  const button = $("o-submit");
  const buy = side() === "buy";
  button.textContent = `${buy ? "Buy" : "Sell"} ${instrument().base || ""}`.trim();
  button.classList.toggle("buy-btn", buy);
  button.classList.toggle("sell-btn", !buy);
}

for (const radio of document.querySelectorAll("input[name=side]")) radio.addEventListener("change", updateSubmitLabel);
watchEntryFields();

function message(id, text, ok) {
  const node = $(id);
  node.className = `msg ${ok ? "ok" : "error"}`;
  node.textContent = text;
}

$("order-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  if (!account.connected) {
    message("o-msg", "Connect an API key first (Account panel).", false);
    $("c-key").focus();
    return;
  }
  let order;
  try {
    order = orderBody(state.symbol);
  } catch (error) {
    if (!(error instanceof EntryError)) throw error;
    message("o-msg", error.message, false);
    $(error.field).focus();
    return;
  }
  const button = $("o-submit");
  button.disabled = true;
  message("o-msg", "sending…", true);
  try {
    const placed = await account.place(order);
    const filled = Number(placed.filled_qty) > 0 ? `, filled ${placed.filled_qty}` : "";
    message(
      "o-msg",
      `Order ${placed.order_id} ${placed.status.replace("_", " ")}: ${placed.side} ${placed.qty} ${placed.symbol}` +
        `${placed.price === null ? " at market" : ` @ ${placed.price}`}${filled}`,
      true,
    );
  } catch (error) {
    message("o-msg", `Rejected — ${error.describe ? error.describe() : error}`, false);
  } finally {
    button.disabled = false;
  }
});

// Clicking a level takes its price.
for (const id of ["asks", "bids"]) {
  $(id).addEventListener("click", (event) => {
    const row = event.target.closest("button.row");
    if (!row) return;
    if (!["stop_limit", "limit_if_touched"].includes($("o-type").value)) $("o-type").value = "limit";
    updateEntryFields();
    $("o-price").value = row.dataset.price;
    $("o-qty").focus();
  });
}

// ---------- credentials and tabs ----------

$("creds-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  message("c-msg", "checking…", true);
  try {
    await account.connect($("c-key").value, $("c-secret").value);
    $("c-secret").value = "";
    message("c-msg", `connected: account ${account.accountId}`, true);
  } catch (error) {
    message("c-msg", error.describe ? error.describe() : String(error), false);
  }
});

$("c-forget").addEventListener("click", () => {
  account.forget();
  $("c-key").value = "";
  $("c-secret").value = "";
  message("c-msg", "credentials forgotten", true);
});

$("refresh").addEventListener("click", () => account.refresh());

function selectTab(open) {
  $("tab-open").setAttribute("aria-selected", String(open));
  $("tab-fills").setAttribute("aria-selected", String(!open));
  $("open-orders").classList.toggle("hidden", !open);
  $("fills-view").classList.toggle("hidden", open);
}
$("tab-open").addEventListener("click", () => selectTab(true));
$("tab-fills").addEventListener("click", () => selectTab(false));

for (const radio of document.querySelectorAll("input[name=interval]")) {
  radio.addEventListener("change", () => {
    state.interval = radio.value;
    state.candles = [];
    candleChart.set([], priceDp(), state.interval);
    feed.showInterval(state.interval);
    loadCandles(state.symbol, state.interval);
  });
}

$("symbol").addEventListener("change", () => show($("symbol").value));

// ---------- start ----------

async function start() {
  let instruments = [];
  try {
    instruments = (await getJson("/v1/instruments")).instruments;
  } catch (error) {
    $("book-status").textContent = `cannot list instruments: ${error.describe ? error.describe() : error}`;
    return;
  }
  for (const i of instruments) state.instruments.set(i.symbol, i);
  $("symbol").replaceChildren(...instruments.map((i) => el("option", { value: i.symbol }, i.symbol)));
  if (!instruments.length) {
    $("book-status").textContent = "no instrument is listed";
    return;
  }
  const wanted = new URL(location.href).searchParams.get("symbol");
  const symbol = state.instruments.has(wanted) ? wanted : instruments[0].symbol;
  $("symbol").value = symbol;
  updateEntryFields();
  if (account.connected) {
    $("c-key").value = account.credentials.key;
    message("c-msg", "connecting…", true);
  }
  renderOrders([]);
  renderFills([]);
  renderBalances([]);
  show(symbol);
  account.start();
}

// For the browser tests and the curious: the live objects.
window.exchangeUi = { feed, account, state };

start();
