// The member risk controls of /ops: suspend and reinstate an account, set
// or clear its pre-trade limits, and set, remove or reset its market-maker
// protection, through the admin routes with the token ops.js keeps.

import { $, getJson, ApiError } from "./common.js";

const STORE = "exchange.admin_token";

function show(text, failed) {
  $("risk-result").textContent = text;
  $("risk-result").classList.toggle("error", failed);
}

function account() {
  const value = $("risk-account").value.trim();
  if (!/^[1-9][0-9]*$/.test(value)) throw new ApiError(0, "invalid_account", "enter an account id");
  return value;
}

function symbol() {
  const value = $("mmp-symbol").value.trim();
  if (!value) throw new ApiError(0, "invalid_symbol", "enter a symbol");
  return encodeURIComponent(value);
}

/** Only the fields given: an empty field is no limit. */
function fields(pairs) {
  const body = {};
  for (const [key, id, number] of pairs) {
    const value = $(id).value.trim();
    if (value) body[key] = number ? Number(value) : value;
  }
  return body;
}

async function send(method, pathOf, bodyOf, confirmText) {
  try {
    const token = sessionStorage.getItem(STORE);
    if (!token) throw new ApiError(0, "no_token", "connect with the admin token first");
    const path = pathOf();
    const body = bodyOf ? bodyOf() : undefined;
    if (confirmText && !window.confirm(confirmText())) return;
    const headers = { Authorization: `Bearer ${token}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const answer = await getJson(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    show(JSON.stringify(answer, null, 2), false);
  } catch (error) {
    show(error instanceof ApiError ? error.describe() : String(error), true);
  }
}

const base = () => `/admin/accounts/${account()}`;

$("risk-suspend").addEventListener("click", () =>
  send("POST", () => `${base()}/suspend`, null, () => `Suspend account ${account()} and cancel all its open orders?`),
);
$("risk-reinstate").addEventListener("click", () => send("POST", () => `${base()}/reinstate`));
$("risk-limits-set").addEventListener("click", () =>
  send("PUT", () => `${base()}/risk-limits`, () =>
    fields([
      ["max_order_qty", "risk-qty"],
      ["max_order_notional", "risk-notional"],
      ["max_open_orders", "risk-open", true],
      ["price_band_pct", "risk-band"],
    ]),
  ),
);
$("risk-limits-clear").addEventListener("click", () => send("DELETE", () => `${base()}/risk-limits`));
$("mmp-set").addEventListener("click", () =>
  send("PUT", () => `${base()}/mmp/${symbol()}`, () =>
    fields([
      ["window_ms", "mmp-window", true],
      ["max_qty", "mmp-qty"],
      ["max_count", "mmp-count", true],
    ]),
  ),
);
$("mmp-remove").addEventListener("click", () => send("DELETE", () => `${base()}/mmp/${symbol()}`));
$("mmp-reset").addEventListener("click", () => send("POST", () => `${base()}/mmp/${symbol()}/reset`));
$("risk-form").addEventListener("submit", (event) => event.preventDefault());
