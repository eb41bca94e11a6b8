// The public market-data channels on /v1/ws (docs/marketdata.md): one
// socket carrying level2, trades, ticker and candles for the instrument on
// screen, reconnecting when it drops.
//
// The level2 book is only ever shown in a state the exchange had: every
// update must carry the sequence after the book's, and a heartbeat must
// not announce a later one. Anything else means a message was missed, and
// the book is thrown away and resubscribed (a fresh snapshot) instead of
// being patched into something the exchange never had.

/** An aggregated book: price string -> quantity string, per side. */
export class Book {
  constructor(symbol) {
    this.symbol = symbol;
    this.bids = new Map();
    this.asks = new Map();
    this.sequence = null;
    this.synced = false;
  }

  snapshot(message) {
    this.bids = new Map(message.bids);
    this.asks = new Map(message.asks);
    this.sequence = message.sequence;
    this.synced = true;
  }

  /** Applies an update: "applied", "stale" (already in the book) or "gap". */
  apply(message) {
    if (!this.synced) return "stale";
    if (message.sequence <= this.sequence) return "stale";
    if (message.sequence !== this.sequence + 1) return "gap";
    for (const [side, price, qty] of message.changes) {
      const levels = side === "buy" ? this.bids : this.asks;
      if (Number(qty) === 0) levels.delete(price);
      else levels.set(price, qty);
    }
    this.sequence = message.sequence;
    return "applied";
  }

  /** The best `depth` levels of a side: [[price, qty], ...] strings. */
  levels(side, depth) {
    const map = side === "buy" ? this.bids : this.asks;
    const sorted = Array.from(map.entries()).sort((a, b) =>
      side === "buy" ? Number(b[0]) - Number(a[0]) : Number(a[0]) - Number(b[0]),
    );
    return sorted.slice(0, depth);
  }
}

export class MarketFeed {
  /**
   * handlers: onState(text, live), onBook(book), onTrade(message),
   * onTicker(message), onCandle(message), onResync(count).
   */
  constructor(handlers) {
    this.handlers = handlers;
    this.symbol = null;
    this.interval = "1m";
    this.book = null;
    this.socket = null;
    this.retry = 500;
    this.nextId = 1;
    this.resyncs = 0;
    // Test hook: drop the next level2 update as if the network lost it.
    this.dropNextUpdate = false;
  }

  /** Shows `symbol` with candles of `interval`; (re)subscribes. */
  show(symbol, interval) {
    const old = this.symbol;
    const oldInterval = this.interval;
    this.symbol = symbol;
    this.interval = interval;
    this.book = new Book(symbol);
    if (!this.isOpen()) {
      this.connect();
      return;
    }
    if (old) {
      for (const channel of ["level2", "trades", "ticker"]) this.send({ type: "unsubscribe", channel, symbols: [old] });
      this.send({ type: "unsubscribe", channel: "candles", interval: oldInterval, symbols: [old] });
    }
    this.subscribeAll();
  }

  /** Changes the candle interval only. */
  showInterval(interval) {
    const old = this.interval;
    this.interval = interval;
    if (!this.isOpen() || !this.symbol) return;
    this.send({ type: "unsubscribe", channel: "candles", interval: old, symbols: [this.symbol] });
    this.send({ type: "subscribe", channel: "candles", interval, symbols: [this.symbol] });
  }

  isOpen() {
    return this.socket && this.socket.readyState === WebSocket.OPEN;
  }

  send(message) {
    if (this.isOpen()) this.socket.send(JSON.stringify({ ...message, request_id: this.nextId++ }));
  }

  subscribeAll() {
    const symbols = [this.symbol];
    this.send({ type: "subscribe", channel: "level2", symbols });
    this.send({ type: "subscribe", channel: "trades", symbols });
    this.send({ type: "subscribe", channel: "ticker", symbols });
    this.send({ type: "subscribe", channel: "candles", interval: this.interval, symbols });
  }

  connect() {
    if (this.socket) return;
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/ws`;
    const socket = new WebSocket(url);
    this.socket = socket;
    this.handlers.onState("connecting", false);
    socket.addEventListener("open", () => {
      this.retry = 500;
      this.handlers.onState("live", true);
      if (this.symbol) {
        this.book = new Book(this.symbol);
        this.subscribeAll();
      }
    });
    socket.addEventListener("message", (event) => this.receive(event.data));
    socket.addEventListener("close", () => {
      this.socket = null;
      this.handlers.onState("reconnecting", false);
      setTimeout(() => this.connect(), this.retry);
      this.retry = Math.min(this.retry * 2, 10000);
    });
  }

  /** Throws the book away and asks for a new snapshot. */
  resync() {
    this.resyncs += 1;
    this.book = new Book(this.symbol);
    this.send({ type: "unsubscribe", channel: "level2", symbols: [this.symbol] });
    this.send({ type: "subscribe", channel: "level2", symbols: [this.symbol] });
    this.handlers.onResync(this.resyncs);
  }

  receive(data) {
    let message;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    // Messages for an instrument no longer shown may still be in flight.
    if (message.symbol && message.symbol !== this.symbol) return;
    switch (message.type) {
      case "snapshot":
        if (message.channel === "level2") {
          this.book.snapshot(message);
          this.handlers.onBook(this.book);
        }
        break;
      case "update":
        if (message.channel !== "level2") break;
        if (this.dropNextUpdate && this.book.synced) {
          this.dropNextUpdate = false;
          break;
        }
        switch (this.book.apply(message)) {
          case "applied":
            this.handlers.onBook(this.book);
            break;
          case "gap":
            this.resync();
            break;
          default:
            break;
        }
        break;
      case "heartbeat":
        if (message.channel === "level2" && this.book.synced && message.sequence > this.book.sequence) {
          this.resync();
        }
        break;
      case "trade":
        this.handlers.onTrade(message);
        break;
      case "ticker":
        this.handlers.onTicker(message);
        break;
      case "candle":
        if (message.interval === this.interval) this.handlers.onCandle(message);
        break;
      case "error":
        this.handlers.onState(`market data: ${message.code}`, false);
        break;
      default:
        break;
    }
  }
}
