// The order form of the trading screen: which inputs apply to the chosen
// type and time in force, and the REST place body (docs/server.md,
// `POST /v1/orders`) they make. The form only shapes the request; whether
// the order is acceptable is the exchange's decision, and its refusal is
// shown as it comes.

import { $ } from "./common.js";

/** The inputs each choice needs, shown; the rest hidden (and not sent). */
export function updateEntryFields() {
  const type = $("o-type").value;
  const tif = $("o-tif").value;
  const buy = document.querySelector("input[name=side]:checked").value === "buy";
  const market = type === "market";
  const touched = type === "market_if_touched" || type === "limit_if_touched";
  const stop = type === "stop" || type === "stop_limit" || touched;
  const midpoint = type === "midpoint";
  // A midpoint order's price is an optional limit.
  const priced = type === "limit" || type === "stop_limit" || type === "limit_if_touched" || midpoint;
  // A minimum is judged on entry: only orders that may trade then take one
  // (a market-to-limit order has no price field: it takes the best opposite);
  // a midpoint order's minimum also holds while it rests.
  const takesMinQty = ["limit", "market", "market_to_limit", "midpoint"].includes(type);
  // Only a market buy can be sized by the quote it spends.
  const byFunds = market && buy && $("o-by-funds").checked;

  // Immediate orders have no resting time in force.
  const tifSelect = $("o-tif");
  for (const value of ["gtc", "day", "gtd"]) tifSelect.querySelector(`option[value=${value}]`).disabled = market;
  if (market && ["gtc", "day", "gtd"].includes(tif)) tifSelect.value = "ioc";

  const show = (id, visible) => $(id).classList.toggle("hidden", !visible);
  show("o-price-field", priced);
  show("o-stop-row", stop);
  show("o-funds-check", market && buy);
  show("o-qty-field", !byFunds);
  show("o-funds-field", byFunds);
  show("o-display-field", type === "limit" && tifSelect.value === "gtc");
  show("o-expire-field", tifSelect.value === "gtd");
  show("o-min-qty-field", takesMinQty && !byFunds);
  // Neither a market order nor a midpoint order may be paired.
  show("o-oco-field", !market && !midpoint);
  const price = $("o-price");
  price.placeholder = midpoint ? "limit (optional)" : price.dataset.placeholder || "0.00";
  show("o-post-check", type === "limit");
  if (type !== "limit") $("o-post").checked = false;
  hiddenOrIceberg(type, tifSelect.value);
  // An if-touched order waits for a fixed price: it takes no trailing distance.
  if (touched) $("o-trigger").value = "stop_price";
  $("o-trigger").disabled = touched;
  const trigger = $("o-trigger").value;
  $("o-stop-label").textContent =
    trigger === "trailing_bps" ? "Trailing distance (bps)" : trigger === "trailing_amount" ? "Trailing distance" : "Stop price";
  $("o-stop").placeholder = trigger === "trailing_bps" ? "50" : "0.00";
}

/**
 * A hidden order is a limit order that may rest (not IOC or FOK) and is no
 * iceberg (docs/protocol.md, "Hidden orders"): the box is offered only
 * then, and a display quantity and the box exclude each other, so the
 * form cannot send what the exchange refuses as `hidden_not_allowed`.
 */
function hiddenOrIceberg(type, tif) {
  const hidden = $("o-hidden");
  const limit = type === "limit";
  const iceberg = limit && tif === "gtc" && $("o-display").value.trim() !== "";
  $("o-hidden-check").classList.toggle("hidden", !limit);
  hidden.disabled = !limit || tif === "ioc" || tif === "fok" || iceberg;
  if (hidden.disabled) hidden.checked = false;
  $("o-display").disabled = hidden.checked;
}

/** Wires the inputs that change which others apply. */
export function watchEntryFields() {
  for (const id of ["o-type", "o-tif", "o-trigger", "o-by-funds", "o-hidden"]) $(id).addEventListener("change", updateEntryFields);
  $("o-display").addEventListener("input", updateEntryFields);
  for (const radio of document.querySelectorAll("input[name=side]")) radio.addEventListener("change", updateEntryFields);
}

/** A form problem the user can fix before anything is sent. */
export class EntryError extends Error {
  constructor(field, message) {
    super(message);
    this.field = field;
  }
}

/** Nanoseconds since the epoch of a `datetime-local` value (local time), as digits. */
export function expireNanos(value) {
  const ms = new Date(value).getTime();
  if (!Number.isFinite(ms)) return null;
  return (BigInt(ms) * 1000000n).toString();
}

/**
 * The place body of the form as JSON text: an object would lose the
 * nanosecond `expire_ts` (above 2^53) to a float.
 */
export function orderBody(symbol) {
  const value = (id) => $(id).value.trim();
  const type = $("o-type").value;
  const tif = $("o-tif").value;
  const side = document.querySelector("input[name=side]:checked").value;
  const order = { symbol, side, type, qty: value("o-qty"), tif };
  if (type === "limit" || type === "stop_limit" || type === "limit_if_touched") {
    order.price = value("o-price");
    if (!order.price) throw new EntryError("o-price", `Enter a price for a ${type.replaceAll("_", "-")} order.`);
  }
  if (type === "midpoint" && value("o-price")) order.price = value("o-price");
  if (type === "limit") order.post_only = $("o-post").checked;
  const hidden = $("o-hidden");
  if (type === "limit" && hidden.checked && !hidden.disabled) order.hidden = true;
  if (["stop", "stop_limit", "market_if_touched", "limit_if_touched"].includes(type)) {
    const trigger = $("o-trigger").value;
    const distance = value("o-stop");
    if (!distance) throw new EntryError("o-stop", "Enter the stop price or the trailing distance.");
    if (trigger === "trailing_bps") {
      if (!/^\d+$/.test(distance)) throw new EntryError("o-stop", "A trailing distance in bps is a whole number.");
      order.trailing_bps = Number(distance);
    } else if (trigger === "trailing_amount") {
      order.trailing_amount = distance;
    } else {
      order.stop_price = distance;
    }
  }
  if (type === "market" && side === "buy" && $("o-by-funds").checked) {
    order.funds = value("o-funds");
    order.qty = "0";
    if (!order.funds) throw new EntryError("o-funds", "Enter the amount to spend.");
  } else if (!order.qty) {
    throw new EntryError("o-qty", "Enter a quantity.");
  }
  if (type === "limit" && tif === "gtc" && !order.hidden && value("o-display")) order.display_qty = value("o-display");
  const minQty = ["limit", "market", "market_to_limit", "midpoint"].includes(type) && !order.funds;
  if (minQty && value("o-min-qty")) order.min_qty = value("o-min-qty");
  if (type !== "market" && type !== "midpoint" && value("o-oco")) order.oco_with = value("o-oco");
  let expire = null;
  if (tif === "gtd") {
    expire = expireNanos($("o-expire").value);
    if (expire === null) throw new EntryError("o-expire", "Choose when a good-till-date order expires.");
    order.expire_ts = expire;
  }
  const text = JSON.stringify(order);
  return expire === null ? text : text.replace(`"expire_ts":"${expire}"`, `"expire_ts":${expire}`);
}
