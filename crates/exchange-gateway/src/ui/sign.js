// Request signing, exactly as the server checks it (docs/server.md):
// lowercase hex of HMAC-SHA256, keyed with the API secret's UTF-8 bytes,
// over timestamp (Unix milliseconds) + "\n" + METHOD + "\n" +
// path_and_query + "\n" + body. The newlines keep a captured request's
// path and body from being cut elsewhere; GET and DELETE carry no body.
// WebCrypto does the MAC;
// the secret stays in this tab (sessionStorage) and is never sent.

import { ApiError, readJson } from "./common.js";

const encoder = new TextEncoder();
const STORE = "exchange.credentials";
// Server time minus local time, in milliseconds, learnt from the Date
// header of signed answers, so a local clock that is off does not make
// every signature stale.
let skew = 0;
// The last timestamp given out: each is later than the one before, since
// the server accepts a signed request once and two identical requests in
// one millisecond would otherwise be the same request.
let last = 0;

function hex(buffer) {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The signature of one request (lowercase hex). */
export async function sign(secret, timestamp, method, pathAndQuery, body) {
  if (!globalThis.crypto || !crypto.subtle) {
    throw new ApiError(0, "no_webcrypto",
      "this browser offers no WebCrypto here: open the page over https, or at 127.0.0.1/localhost");
  }
  const key = await crypto.subtle.importKey(
    "raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign(
    "HMAC", key, encoder.encode(`${timestamp}\n${method}\n${pathAndQuery}\n${body}`));
  return hex(mac);
}

export function loadCredentials() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(STORE) || "null");
    if (saved && typeof saved.key === "string" && typeof saved.secret === "string") return saved;
  } catch {
    // Unreadable: as if none were saved.
  }
  return null;
}

export function saveCredentials(key, secret) {
  sessionStorage.setItem(STORE, JSON.stringify({ key, secret }));
}

export function forgetCredentials() {
  sessionStorage.removeItem(STORE);
}

/** Unix milliseconds (server time as best known), never repeated. */
export function timestamp() {
  last = Math.max(Date.now() + skew, last + 1);
  return String(last);
}

function learnSkew(response) {
  const date = Date.parse(response.headers.get("date") || "");
  if (Number.isFinite(date)) {
    // The header has one-second resolution (the server's time is within
    // the second after it): only an offset beyond that counts.
    const diff = Math.round(date + 500 - Date.now());
    skew = Math.abs(diff) > 1000 ? diff : 0;
  }
}

/**
 * A signed REST call with `credentials` ({key, secret}); `body` is an
 * object (sent as JSON), JSON text (sent as is) or undefined. Resolves to the JSON answer, rejects
 * with an ApiError carrying the server's code and message.
 */
export async function signedFetch(credentials, method, pathAndQuery, body) {
  const text = body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body);
  const ts = timestamp();
  const signature = await sign(credentials.secret, ts, method, pathAndQuery, text);
  const headers = {
    "EX-ACCESS-KEY": credentials.key,
    "EX-ACCESS-TIMESTAMP": ts,
    "EX-ACCESS-SIGN": signature,
  };
  if (text) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(pathAndQuery, { method, headers, body: text || undefined });
  } catch (error) {
    throw new ApiError(0, "network", `cannot reach the exchange (${error.message})`);
  }
  learnSkew(response);
  return readJson(response);
}
