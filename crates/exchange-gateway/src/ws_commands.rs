//! The order-entry messages of a WebSocket (`place`, `cancel`, `replace`,
//! `mass_cancel`) read field by field: the general path, which names every
//! mistake, and the reference the fast path
//! ([`super::translate::ws_order_entry`]) is held to.

use exchange_types::{AccountId, Command, OrderRef};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::ApiError;
use super::translate;
use super::ws_kind::EntryType;

/// Takes `order_id` or `client_order_id` (exactly one) out of a message.
fn take_order_ref(fields: &mut Map<String, Value>) -> Result<OrderRef, ApiError> {
    let by_id = fields.remove("order_id");
    let by_client = fields.remove("client_order_id");
    match (by_id, by_client) {
        (Some(Value::Number(n)), None) => match n.as_u64() {
            Some(id) => crate::ids::order_id("order_id", id).map(OrderRef::Id),
            // A whole number beyond u64 (read as a float) is out of
            // range, not mistyped.
            None if n.as_f64().is_some_and(|f| f >= 1.0 && f.fract() == 0.0) => {
                crate::ids::order_id("order_id", 0).map(OrderRef::Id)
            }
            None => Err(ApiError::bad_request(
                "invalid_type",
                "field `order_id` must be an unsigned integer",
            )),
        },
        (None, Some(Value::String(text))) => translate::by_client_id(&text),
        (Some(_), None) => Err(ApiError::bad_request(
            "invalid_type",
            "field `order_id` must be an unsigned integer",
        )),
        (None, Some(_)) => Err(ApiError::bad_request(
            "invalid_type",
            "field `client_order_id` must be a string",
        )),
        _ => Err(ApiError::bad_request(
            "missing_field",
            "give exactly one of `order_id` and `client_order_id`",
        )),
    }
}

pub(super) fn from_fields<T: serde::de::DeserializeOwned>(
    fields: Map<String, Value>,
) -> Result<T, ApiError> {
    serde_json::from_value(Value::Object(fields)).map_err(|e| ApiError::from_json(&e))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoFields {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SymbolFields {
    symbol: Option<String>,
}

/// The command an order-entry message (`place`, `cancel`, `replace`,
/// `mass_cancel`) asks for, its `type` and `request_id` taken out: the
/// general path, which checks every field and names every mistake.
/// [`translate::ws_order_entry`] may only ever agree with it.
pub(crate) fn order_entry_command(
    account: AccountId,
    kind: EntryType,
    mut fields: Map<String, Value>,
) -> Result<Command, ApiError> {
    Ok(match kind {
        EntryType::Place => {
            // `type` names the message, so the order's type travels as
            // `order_type` here.
            if let Some(order_type) = fields.remove("order_type") {
                fields.insert("type".into(), order_type);
            }
            translate::place(account, from_fields(fields)?)?
        }
        EntryType::Cancel => {
            let order = take_order_ref(&mut fields)?;
            from_fields::<NoFields>(fields)?;
            translate::cancel(account, order)
        }
        EntryType::Replace => {
            let order = take_order_ref(&mut fields)?;
            translate::replace(account, order, from_fields(fields)?)?
        }
        EntryType::MassCancel => {
            let symbol = from_fields::<SymbolFields>(fields)?.symbol;
            translate::mass_cancel(account, symbol.as_deref())?
        }
    })
}
