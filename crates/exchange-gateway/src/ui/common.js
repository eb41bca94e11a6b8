// Small helpers shared by the pages: DOM building, number formatting,
// JSON requests and their error bodies.

/** Creates an element: el("td", {class: "num"}, "text", child...). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

export const $ = (id) => document.getElementById(id);

/** An error from the exchange: its code, message and HTTP status. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code);
    this.status = status;
    this.code = code;
  }
  /** What the user reads: "price_not_on_tick: the price is not ..." */
  describe() {
    return this.code ? `${this.code}: ${this.message}` : this.message;
  }
}

/** Reads a response: its JSON body, or an ApiError from the error body. */
export async function readJson(response) {
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) {
    const code = body && typeof body.code === "string" ? body.code : `http_${response.status}`;
    const message = body && typeof body.message === "string" ? body.message : text || response.statusText;
    throw new ApiError(response.status, code, message);
  }
  return body;
}

export async function getJson(path, options = {}) {
  let response;
  try {
    response = await fetch(path, options);
  } catch (error) {
    throw new ApiError(0, "network", `cannot reach the exchange (${error.message})`);
  }
  return readJson(response);
}

/** Trims a decimal string for display without changing its value. */
export function fmt(value, places) {
  if (value === null || value === undefined || value === "") return "—";
  if (places === undefined) return String(value);
  const n = Number(value);
  return Number.isFinite(n) ? n.toFixed(places) : String(value);
}

/** Decimal places of a tick or lot such as "0.01" (2). */
export function decimalsOf(step) {
  const text = String(step || "");
  const dot = text.indexOf(".");
  return dot < 0 ? 0 : text.length - dot - 1;
}

/** "12:34:56" from nanoseconds since the epoch, in local time. */
export function clock(nanos) {
  const d = new Date(Number(nanos) / 1e6);
  return d.toLocaleTimeString([], { hour12: false });
}

/** A compact amount: 12.3k, 4.5M. */
export function compact(n) {
  const abs = Math.abs(n);
  if (abs >= 1e9) return (n / 1e9).toFixed(2) + "B";
  if (abs >= 1e6) return (n / 1e6).toFixed(2) + "M";
  if (abs >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return n.toFixed(abs >= 100 ? 0 : abs >= 1 ? 2 : 4);
}

/** Microseconds as "850 µs" or "1.25 ms" or "2.0 s". */
export function micros(us) {
  if (us === null || us === undefined) return "—";
  if (us < 1000) return `${us} µs`;
  if (us < 1e6) return `${(us / 1000).toFixed(us < 1e4 ? 2 : 1)} ms`;
  return `${(us / 1e6).toFixed(2)} s`;
}

/** Runs `fn` at most once per animation frame. */
export function throttled(fn) {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      fn();
    });
  };
}
