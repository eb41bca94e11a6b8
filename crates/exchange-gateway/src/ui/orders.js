// The signed-in part of the trading screen: the account's open orders,
// fills and balances, and the calls that change them. Reads are plain
// signed REST calls; the account's private stream on /v1/ws (an
// authenticated socket) says when something changed, whoever caused it,
// so the tables follow fills from the market without polling fast.

import { signedFetch, sign, timestamp, loadCredentials, saveCredentials, forgetCredentials } from "./sign.js";
import { ApiError } from "./common.js";

const SLOW_POLL_MS = 10000;

export class Account {
  /** handlers: onData({orders, fills, balances, accountId}), onState(text, ok), onError(error). */
  constructor(handlers) {
    this.handlers = handlers;
    this.credentials = loadCredentials();
    this.accountId = null;
    this.orders = [];
    this.fills = [];
    this.balances = [];
    this.socket = null;
    this.refreshTimer = null;
    this.pollTimer = null;
    this.generation = 0;
  }

  get connected() {
    return this.credentials !== null;
  }

  /** Checks the key with a signed read; keeps it for this tab if it works. */
  async connect(key, secret) {
    const credentials = { key: key.trim(), secret: secret.trim() };
    if (!credentials.key || !credentials.secret) {
      throw new ApiError(0, "missing_credentials", "enter both the API key and the API secret");
    }
    const balances = await signedFetch(credentials, "GET", "/v1/balances");
    saveCredentials(credentials.key, credentials.secret);
    this.credentials = credentials;
    this.accountId = balances.account_id;
    this.start();
  }

  forget() {
    forgetCredentials();
    this.credentials = null;
    this.accountId = null;
    this.orders = [];
    this.fills = [];
    this.balances = [];
    this.stop();
    this.emit();
  }

  /** Starts following the account (after connect, or on page load). */
  start() {
    if (!this.credentials) return;
    this.stop();
    const generation = this.generation;
    this.openStream(generation);
    this.refresh();
    this.pollTimer = setInterval(() => this.refresh(), SLOW_POLL_MS);
  }

  stop() {
    this.generation += 1;
    clearInterval(this.pollTimer);
    this.pollTimer = null;
    if (this.socket) {
      const socket = this.socket;
      this.socket = null;
      socket.close();
    }
  }

  emit() {
    this.handlers.onData({
      orders: this.orders,
      fills: this.fills,
      balances: this.balances,
      accountId: this.accountId,
    });
  }

  async refresh() {
    if (!this.credentials) return;
    const credentials = this.credentials;
    try {
      const [orders, fills, balances] = await Promise.all([
        signedFetch(credentials, "GET", "/v1/orders?status=open"),
        signedFetch(credentials, "GET", "/v1/fills?limit=50"),
        signedFetch(credentials, "GET", "/v1/balances"),
      ]);
      if (credentials !== this.credentials) return;
      this.orders = orders.orders;
      this.fills = fills.fills;
      this.balances = balances.balances;
      this.accountId = balances.account_id;
      this.emit();
    } catch (error) {
      this.handlers.onError(error);
    }
  }

  /** Refreshes soon, once, however many updates arrive meanwhile. */
  refreshSoon() {
    if (this.refreshTimer) return;
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = null;
      this.refresh();
    }, 120);
  }

  async openStream(generation) {
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/ws`;
    const ts = timestamp();
    let signature;
    try {
      signature = await sign(this.credentials.secret, ts, "GET", "/v1/ws", "");
    } catch (error) {
      this.handlers.onError(error);
      return;
    }
    if (generation !== this.generation) return;
    const socket = new WebSocket(url);
    this.socket = socket;
    socket.addEventListener("open", () => {
      socket.send(JSON.stringify({ type: "auth", key: this.credentials.key, timestamp: Number(ts), signature }));
    });
    socket.addEventListener("message", (event) => {
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        return;
      }
      if (message.type === "auth") {
        if (message.ok) {
          this.handlers.onState(`account ${message.account_id}`, true);
        } else {
          // The key is wrong or stale: reconnecting would only fail again.
          this.generation += 1;
          this.handlers.onError(new ApiError(401, message.code, message.message));
        }
      } else if (message.type === "order" || message.type === "fill") {
        this.refreshSoon();
      }
    });
    socket.addEventListener("close", () => {
      if (generation !== this.generation) return;
      this.socket = null;
      this.handlers.onState("account stream reconnecting", false);
      // Whatever happened while it was down is read again on reconnect.
      setTimeout(() => {
        if (generation === this.generation) {
          this.openStream(generation);
          this.refresh();
        }
      }, 2000);
    });
  }

  /** Places `order` (an object, or JSON text as the form makes it). */
  async place(order) {
    const answer = await signedFetch(this.credentials, "POST", "/v1/orders", order);
    this.refreshSoon();
    return answer;
  }

  async cancel(orderId) {
    const answer = await signedFetch(this.credentials, "DELETE", `/v1/orders/${orderId}`);
    this.refreshSoon();
    return answer;
  }

  /** Replaces price and/or total quantity (only the fields given). */
  async amend(orderId, changes) {
    const answer = await signedFetch(this.credentials, "POST", `/v1/orders/${orderId}/replace`, changes);
    this.refreshSoon();
    return answer;
  }
}
