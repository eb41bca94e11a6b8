// Trading phases: the public `status` channel on /v1/ws (docs/marketdata.md)
// and what the pages show of it. A server without the channel refuses the
// subscription (`unsupported`): the feed then gives up quietly and the pages
// show no phase rather than an error, so they work against older servers.

/** Phases in which orders are collected for an auction (an indicative may exist). */
const CALL_PHASES = new Set(["pre_open", "opening_auction", "closing_call", "closing_auction", "volatility_auction"]);

/** The badge style of each phase: continuous, a call, halted, a volatility auction, closed. */
export function phaseClass(phase) {
  if (phase === "continuous") return "phase-continuous";
  if (phase === "halted") return "phase-halted";
  if (phase === "volatility_auction") return "phase-volatility";
  if (CALL_PHASES.has(phase)) return "phase-call";
  return "phase-closed";
}

export function isCall(phase) {
  return CALL_PHASES.has(phase);
}

/** "101.5 × 3, imbalance buy 2", or "no cross" for a call where nothing crosses. */
export function describeIndicative(indicative) {
  if (!indicative || indicative.price === null || indicative.price === undefined) return "no cross";
  const side = indicative.imbalance_side;
  const imbalance = side && Number(indicative.imbalance_qty) > 0 ? `, imbalance ${side} ${indicative.imbalance_qty}` : "";
  return `${indicative.price} × ${indicative.volume}${imbalance}`;
}

/** Shows `status` in a badge element and the indicative in `indicativeNode` (both optional). */
export function renderPhase(badge, indicativeNode, status) {
  if (!status || !status.phase) {
    badge.hidden = true;
    if (indicativeNode) indicativeNode.hidden = true;
    return;
  }
  badge.hidden = false;
  badge.textContent = status.phase.replace(/_/g, " ");
  badge.className = `badge phase ${phaseClass(status.phase)}`;
  badge.dataset.phase = status.phase;
  if (!indicativeNode) return;
  const call = isCall(status.phase);
  indicativeNode.hidden = !call;
  indicativeNode.textContent = call ? `indicative ${describeIndicative(status.indicative)}` : "";
}

/**
 * Its own socket subscribed to `status` for some symbols, reconnecting
 * like the market feed. handlers: onStatus(message), onUnavailable().
 */
export class StatusFeed {
  constructor(handlers) {
    this.handlers = handlers;
    this.symbols = [];
    this.socket = null;
    this.retry = 500;
    this.nextId = 1;
    this.pending = null;
    this.unavailable = false;
  }

  /** Follows exactly `symbols` from now on. */
  follow(symbols) {
    const old = this.symbols;
    this.symbols = symbols.slice();
    if (this.unavailable) return;
    if (!this.socket) {
      this.connect();
      return;
    }
    if (this.socket.readyState !== WebSocket.OPEN) return;
    if (old.length) this.send({ type: "unsubscribe", channel: "status", symbols: old });
    this.subscribe();
  }

  send(message) {
    const request_id = this.nextId++;
    this.socket.send(JSON.stringify({ ...message, request_id }));
    return request_id;
  }

  subscribe() {
    if (this.symbols.length) this.pending = this.send({ type: "subscribe", channel: "status", symbols: this.symbols });
  }

  connect() {
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/ws`;
    const socket = new WebSocket(url);
    this.socket = socket;
    socket.addEventListener("open", () => {
      this.retry = 500;
      this.subscribe();
    });
    socket.addEventListener("message", (event) => {
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        return;
      }
      if (message.type === "status") {
        if (this.symbols.includes(message.symbol)) this.handlers.onStatus(message);
      } else if (message.type === "error" && message.request_id === this.pending) {
        // The server has no such channel: nothing to show, nothing to retry.
        this.unavailable = true;
        this.socket = null;
        socket.close();
        this.handlers.onUnavailable();
      }
    });
    socket.addEventListener("close", () => {
      if (this.socket !== socket) return;
      this.socket = null;
      setTimeout(() => this.connect(), this.retry);
      this.retry = Math.min(this.retry * 2, 10000);
    });
  }
}
