//! Order entry's answers and the private stream's messages written
//! straight to text: the same bytes as serialising
//! [`Response`](super::ws_entry::Response) or a
//! [`PrivateMessage`] with `serde_json`, without serde's map machinery
//! (a `flatten`ed field makes serde write the whole object as a map, one
//! entry at a time) or a value tree.

use serde_json::Value;

use super::error::ApiError;
use super::json_text::{
    push_array, push_bool, push_ids, push_signed_units, push_str, push_u64, Object,
};
use super::translate::{Answer, Op};
use super::wire::{AccountFields, DetailsView, FillView, OrderView, PrivateMessage, UpdateFields};

/// `{"type":"response","request_id",...}` for `result`, as
/// [`super::ws_entry::response`] shapes it, appended to `out`.
pub fn push_response(
    out: &mut Vec<u8>,
    request_id: &Value,
    op: Op,
    result: &Result<Answer<'_>, ApiError>,
) {
    out.extend_from_slice(b"{\"type\":\"response\",\"request_id\":");
    push_value(out, request_id);
    let mut response = Object::continued(out);
    match result {
        Ok(answer) => {
            response.key("ok").extend_from_slice(b"true");
            match answer {
                Answer::Canceled { canceled } if op == Op::MassCancel => {
                    push_ids(response.key("canceled"), canceled)
                }
                answer => push_answer(response.key("order"), answer),
            }
        }
        Err(error) => {
            response.key("ok").extend_from_slice(b"false");
            let mut detail = Object::open(response.key("error"));
            detail.str("code", error.code);
            detail.str("message", &error.message);
            detail.u64("status", u64::from(error.status.as_u16()));
            detail.some_u64("retry_after", error.retry_after);
            detail.close();
        }
    }
    response.close();
}

/// Any JSON value (the client's request id, echoed), as `serde_json`
/// writes it; numbers, the usual case, without the serializer.
fn push_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::String(text) => push_str(out, text),
        Value::Number(number) if number.is_u64() => {
            push_u64(out, number.as_u64().unwrap_or_default())
        }
        other => {
            // Writing to a `Vec` cannot fail, nor can a `Value`.
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

/// An [`Answer`], as its untagged serialisation writes it.
fn push_answer(out: &mut Vec<u8>, answer: &Answer<'_>) {
    match answer {
        Answer::Order(order) => push_order(out, order),
        Answer::Bare { order_id, fills } => {
            let mut object = Object::open(out);
            object.u64("order_id", *order_id);
            push_fills(object.key("fills"), fills);
            object.close();
        }
        Answer::Canceled { canceled } => {
            let mut object = Object::open(out);
            push_ids(object.key("canceled"), canceled);
            object.close();
        }
        Answer::Index { index } => {
            let mut object = Object::open(out);
            object.u64("index", *index);
            object.close();
        }
    }
}

fn push_fills(out: &mut Vec<u8>, fills: &[FillView<'_>]) {
    push_array(out, fills, push_fill);
}

fn push_fill(out: &mut Vec<u8>, fill: &FillView<'_>) {
    let mut object = Object::open(out);
    push_fill_fields(&mut object, fill);
    object.close();
}

/// A fill's members, for a fill of its own or one inside another object.
fn push_fill_fields(object: &mut Object<'_>, fill: &FillView<'_>) {
    object.u64("trade_id", fill.trade_id);
    object.u64("order_id", fill.order_id);
    object.str("symbol", fill.symbol);
    object.str("side", fill.side);
    object.units("price", fill.price.0);
    object.units("qty", fill.qty.0);
    push_signed_units(object.key("fee"), fill.fee.0);
    object.str("liquidity", fill.liquidity);
    object.u64("ts", fill.ts);
}

fn push_order(out: &mut Vec<u8>, order: &OrderView<'_>) {
    let mut object = Object::open(out);
    object.u64("order_id", order.order_id);
    object.str("client_order_id", order.client_order_id);
    object.str("symbol", order.symbol);
    object.str("side", order.side);
    object.str("type", order.order_type);
    match order.price {
        Some(price) => object.units("price", price.0),
        None => object.key("price").extend_from_slice(b"null"),
    }
    object.units("qty", order.qty.0);
    object.units("filled_qty", order.filled_qty.0);
    object.units("remaining_qty", order.remaining_qty.0);
    object.str("status", order.status.as_str());
    object.str("tif", order.tif);
    object.u64("created_ts", order.created_ts);
    object.u64("updated_ts", order.updated_ts);
    if let Some(details) = &order.details {
        push_details(&mut object, details);
    }
    if let Some(fills) = &order.fills {
        push_fills(object.key("fills"), fills);
    }
    object.close();
}

fn push_details(object: &mut Object<'_>, details: &DetailsView<'_>) {
    let units = |units: Option<super::wire::Units>| units.map(|u| u.0);
    object.some_units("stop_price", units(details.stop_price));
    object.some_units("trailing_amount", units(details.trailing_amount));
    object.some_u64("trailing_bps", details.trailing_bps.map(u64::from));
    object.some_units("display_qty", units(details.display_qty));
    object.some_units("funds", units(details.funds));
    object.some_u64("expire_ts", details.expire_ts);
    if let Some(oco_with) = details.oco_with {
        object.str("oco_with", oco_with);
    }
    object.some_u64("triggered_ts", details.triggered_ts);
    object.some_units("triggered_price", units(details.triggered_price));
    if details.hidden {
        push_bool(object.key("hidden"), true);
    }
    object.some_units("min_qty", units(details.min_qty));
}

/// One message of the private stream, as its serialisation writes it.
pub fn push_private(out: &mut Vec<u8>, message: &PrivateMessage<'_>) {
    let mut object = Object::open(out);
    match message {
        PrivateMessage::Order(update) => {
            object.str("type", update.kind);
            object.str("event", update.event);
            object.u64("seq", update.seq);
            object.u64("ts", update.ts);
            push_update_fields(&mut object, &update.fields);
        }
        PrivateMessage::Fill { kind, seq, fill } => {
            object.str("type", kind);
            object.u64("seq", *seq);
            push_fill_fields(&mut object, fill);
        }
        PrivateMessage::Account {
            kind,
            event,
            seq,
            ts,
            fields,
        } => {
            object.str("type", kind);
            object.str("event", event);
            object.u64("seq", *seq);
            object.u64("ts", *ts);
            push_account_fields(&mut object, fields);
        }
    }
    object.close();
}

fn push_account_fields(object: &mut Object<'_>, fields: &AccountFields<'_>) {
    match fields {
        AccountFields::Status { status, canceled } => {
            object.str("status", status);
            object.u64("canceled", u64::from(*canceled));
        }
        AccountFields::Mmp {
            symbol,
            state,
            filled_qty,
            fills,
        } => {
            object.str("symbol", symbol);
            object.str("state", state);
            object.some_units("filled_qty", filled_qty.map(|u| u.0));
            object.some_u64("fills", fills.map(u64::from));
        }
    }
}

/// `null` where the serialisation writes a missing value as null.
fn str_or_null(object: &mut Object<'_>, key: &str, value: Option<&str>) {
    match value {
        Some(value) => object.str(key, value),
        None => object.key(key).extend_from_slice(b"null"),
    }
}

fn push_update_fields(object: &mut Object<'_>, fields: &UpdateFields<'_>) {
    match fields {
        UpdateFields::Accepted { .. } => push_accepted(object, fields),
        UpdateFields::Triggered {
            order_id,
            client_order_id,
            symbol,
            stop_price,
            last_price,
            qty,
        } => {
            object.u64("order_id", *order_id);
            object.str("client_order_id", client_order_id);
            object.str("symbol", symbol);
            object.units("stop_price", stop_price.0);
            object.units("last_price", last_price.0);
            object.units("qty", qty.0);
        }
        UpdateFields::Rejected {
            command,
            order_id,
            client_order_id,
            symbol,
            code,
            message,
        } => {
            object.str("command", command);
            match order_id {
                Some(id) => object.u64("order_id", *id),
                None => object.key("order_id").extend_from_slice(b"null"),
            }
            str_or_null(object, "client_order_id", *client_order_id);
            str_or_null(object, "symbol", *symbol);
            object.str("code", code);
            object.str("message", message);
        }
        UpdateFields::Canceled { .. }
        | UpdateFields::Replaced { .. }
        | UpdateFields::Expired { .. } => push_ended(object, fields),
    }
}

fn push_accepted(object: &mut Object<'_>, fields: &UpdateFields<'_>) {
    let UpdateFields::Accepted {
        order_id,
        client_order_id,
        symbol,
        side,
        order_type,
        price,
        qty,
        tif,
        post_only,
        stp,
        stop_price,
        trailing_amount,
        trailing_bps,
        oco_with,
        display_qty,
        funds,
        expire_ts,
        hidden,
        min_qty,
    } = fields
    else {
        return;
    };
    object.u64("order_id", *order_id);
    object.str("client_order_id", client_order_id);
    object.str("symbol", symbol);
    object.str("side", side);
    object.str("order_type", order_type);
    match price {
        Some(price) => object.units("price", price.0),
        None => object.key("price").extend_from_slice(b"null"),
    }
    object.units("qty", qty.0);
    object.str("tif", tif);
    push_bool(object.key("post_only"), *post_only);
    object.str("stp", stp);
    object.some_units("stop_price", stop_price.map(|u| u.0));
    object.some_units("trailing_amount", trailing_amount.map(|u| u.0));
    object.some_u64("trailing_bps", trailing_bps.map(u64::from));
    if let Some(oco_with) = oco_with {
        object.str("oco_with", oco_with);
    }
    object.some_units("display_qty", display_qty.map(|u| u.0));
    object.some_units("funds", funds.map(|u| u.0));
    object.some_u64("expire_ts", *expire_ts);
    if *hidden {
        push_bool(object.key("hidden"), true);
    }
    object.some_units("min_qty", min_qty.map(|u| u.0));
}

/// A canceled, replaced or expired order's fields.
fn push_ended(object: &mut Object<'_>, fields: &UpdateFields<'_>) {
    match fields {
        UpdateFields::Canceled {
            order_id,
            client_order_id,
            symbol,
            reason,
            canceled_qty,
            filled_qty,
            leaves_qty,
        } => {
            object.u64("order_id", *order_id);
            object.str("client_order_id", client_order_id);
            object.str("symbol", symbol);
            object.str("reason", reason);
            object.units("canceled_qty", canceled_qty.0);
            object.units("filled_qty", filled_qty.0);
            object.units("leaves_qty", leaves_qty.0);
        }
        UpdateFields::Replaced {
            order_id,
            old_client_order_id,
            client_order_id,
            symbol,
            price,
            qty,
            leaves_qty,
            stop_price,
        } => {
            object.u64("order_id", *order_id);
            object.str("old_client_order_id", old_client_order_id);
            object.str("client_order_id", client_order_id);
            object.str("symbol", symbol);
            object.units("price", price.0);
            object.units("qty", qty.0);
            object.units("leaves_qty", leaves_qty.0);
            object.some_units("stop_price", stop_price.map(|u| u.0));
        }
        UpdateFields::Expired {
            order_id,
            client_order_id,
            symbol,
            expired_qty,
            filled_qty,
        } => {
            object.u64("order_id", *order_id);
            object.str("client_order_id", client_order_id);
            object.str("symbol", symbol);
            object.units("expired_qty", expired_qty.0);
            object.units("filled_qty", filled_qty.0);
        }
        _ => {}
    }
}

#[cfg(test)]
#[path = "wire_text_tests.rs"]
mod tests;
