//! The WebSocket's order entry read in one typed pass, its strings
//! borrowed from the message: the bulk of the traffic, without the
//! general path's JSON map (which still reads, and names the problem
//! with, everything this pass leaves).

use std::borrow::Cow;

use exchange_types::{AccountId, Command, OrderRef};
use serde::Deserialize;
use serde_json::Value;

use super::{
    by_client_id, cancel, place_fields, PlaceFields, SideWire, StpWire, TifWire, TypeWire,
};

#[derive(Deserialize)]
enum EntryKind {
    #[serde(rename = "place")]
    Place,
    #[serde(rename = "cancel")]
    Cancel,
}

/// A WebSocket `place` or `cancel`, read in one typed pass whichever it
/// is: trying one shape and then the other would build (and format) a
/// serde error for every message of the second kind. Each field is
/// `None` when absent and `Some(None)` when `null`: the general path
/// refuses a field of the other kind even when it is null, and so must
/// this one. Strings are borrowed from the message.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WsOrderEntry<'a> {
    #[serde(rename = "type")]
    kind: EntryKind,
    #[serde(default)]
    request_id: Value,
    #[serde(default, borrow, deserialize_with = "present")]
    symbol: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present")]
    side: Option<Option<SideWire>>,
    #[serde(default, deserialize_with = "present")]
    order_type: Option<Option<TypeWire>>,
    #[serde(default, borrow, deserialize_with = "present")]
    price: Option<Option<Text<'a>>>,
    #[serde(default, borrow, deserialize_with = "present")]
    qty: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present")]
    tif: Option<Option<TifWire>>,
    #[serde(default, deserialize_with = "present")]
    post_only: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    stp: Option<Option<StpWire>>,
    #[serde(default, deserialize_with = "present")]
    order_id: Option<Option<u64>>,
    #[serde(default, borrow, deserialize_with = "present")]
    client_order_id: Option<Option<Text<'a>>>,
    #[serde(default, borrow, deserialize_with = "present")]
    stop_price: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present")]
    expire_ts: Option<Option<u64>>,
    #[serde(default, borrow, deserialize_with = "present")]
    trailing_amount: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present")]
    trailing_bps: Option<Option<u32>>,
    #[serde(default, borrow, deserialize_with = "present")]
    oco_with: Option<Option<Text<'a>>>,
}

/// A JSON string, borrowed from the message unless it had escapes to
/// undo: the fields of an order are read without an allocation each.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }

            fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E>(self, text: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text)))
            }
        }

        deserializer.deserialize_str(Visitor)
    }
}

/// The text of an optional string field that was there and not null.
fn text<'t>(field: &'t Option<Option<Text<'_>>>) -> Option<&'t str> {
    field.as_ref()?.as_ref().map(|text| text.0.as_ref())
}

/// A field that is there, `null` or not.
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// The request id and command of a well-formed WebSocket `place` or
/// `cancel`, the bulk of the traffic, without the general path's JSON map.
/// Anything else, and every mistake (a field of the other kind included),
/// is `None`: the general path reads it again and names the problem.
pub fn ws_order_entry(account: AccountId, text: &str) -> Option<(Value, Command)> {
    let message = serde_json::from_str::<WsOrderEntry<'_>>(text).ok()?;
    match message.kind {
        EntryKind::Place => ws_place(account, message),
        EntryKind::Cancel => ws_cancel(account, message),
    }
}

fn ws_place(account: AccountId, message: WsOrderEntry<'_>) -> Option<(Value, Command)> {
    let (Some(Some(symbol)), Some(Some(side)), Some(Some(qty)), None) = (
        &message.symbol,
        message.side,
        &message.qty,
        message.order_id,
    ) else {
        return None;
    };
    let fields = PlaceFields {
        symbol: &symbol.0,
        side,
        order_type: message.order_type.flatten(),
        price: text(&message.price),
        qty: &qty.0,
        tif: message.tif.flatten(),
        post_only: message.post_only.flatten(),
        stp: message.stp.flatten(),
        client_order_id: text(&message.client_order_id),
        stop_price: text(&message.stop_price),
        expire_ts: message.expire_ts.flatten(),
        trailing_amount: text(&message.trailing_amount),
        trailing_bps: message.trailing_bps.flatten(),
        oco_with: text(&message.oco_with),
        display_qty: None,
        funds: None,
        min_qty: None,
        hidden: None,
    };
    let command = place_fields(account, &fields).ok()?;
    Some((message.request_id, command))
}

fn ws_cancel(account: AccountId, message: WsOrderEntry<'_>) -> Option<(Value, Command)> {
    let place_fields = message.symbol.is_some()
        || message.side.is_some()
        || message.order_type.is_some()
        || message.price.is_some()
        || message.qty.is_some()
        || message.tif.is_some()
        || message.post_only.is_some()
        || message.stp.is_some()
        || message.stop_price.is_some()
        || message.expire_ts.is_some()
        || message.trailing_amount.is_some()
        || message.trailing_bps.is_some()
        || message.oco_with.is_some();
    if place_fields {
        return None;
    }
    let order = match (message.order_id, &message.client_order_id) {
        // Out of range: the general path names the refusal.
        (Some(Some(id)), None) if exchange_types::order_id_in_range(id) => OrderRef::Id(id),
        (None, Some(Some(client_order_id))) => by_client_id(&client_order_id.0).ok()?,
        _ => return None,
    };
    Some((message.request_id, cancel(account, order)))
}
