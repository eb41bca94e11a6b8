//! The one translation between the wire and the core, shared by REST and
//! WebSocket: JSON requests become [`Command`]s, and the events a command
//! caused become the JSON answer.
//!
//! Only the shape is checked here (fields, types, decimal syntax, enum
//! names, identifier syntax). Whether a value is acceptable — a price on the
//! tick, enough funds, a known symbol — is the core's decision, so every
//! replica decides the same way; its refusal comes back as a `rejected`
//! event and becomes a 4xx here.

use std::future::Future;
use std::sync::Arc;

use exchange_types::ids::InlineStr;
use exchange_types::{
    format_signed_units, format_units, AccountId, Cancel, Command, Dec, Event, EventKind,
    MassCancel, OrderId, OrderRef, OrderType, Place, RejectReason, Replace, SelfTradePrevention,
    Side, Stamped, TimeInForce,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::ApiError;
use crate::entry::LogEntry;
use crate::history::{Fill, History, OrderRecord};
use crate::sequencer::{Handle, SubmitError};
use crate::state::Applied;

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum SideWire {
    Buy,
    Sell,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum TypeWire {
    Limit,
    Market,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum TifWire {
    Gtc,
    Ioc,
    Fok,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StpWire {
    CancelNewest,
    CancelOldest,
    CancelBoth,
    Decrement,
}

/// `POST /v1/orders` and the WebSocket `place` message.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaceRequest {
    symbol: String,
    side: SideWire,
    #[serde(rename = "type")]
    order_type: Option<TypeWire>,
    price: Option<String>,
    qty: String,
    tif: Option<TifWire>,
    post_only: Option<bool>,
    stp: Option<StpWire>,
    client_order_id: Option<String>,
}

/// `POST /v1/orders/{id}/replace` and the WebSocket `replace` message.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceRequest {
    price: Option<String>,
    qty: Option<String>,
    new_client_order_id: Option<String>,
}

pub fn decimal(field: &str, text: &str) -> Result<Dec, ApiError> {
    Dec::parse(text)
        .map_err(|e| ApiError::bad_request("invalid_decimal", format!("field `{field}`: {e}")))
}

pub fn identifier<const N: usize>(field: &str, text: &str) -> Result<InlineStr<N>, ApiError> {
    InlineStr::new(text)
        .map_err(|e| ApiError::bad_request("invalid_value", format!("field `{field}`: {e}")))
}

fn optional_decimal(field: &str, text: Option<&str>) -> Result<Option<Dec>, ApiError> {
    text.map(|t| decimal(field, t)).transpose()
}

pub fn place(account: AccountId, request: PlaceRequest) -> Result<Command, ApiError> {
    let order_type = match request.order_type.unwrap_or(TypeWire::Limit) {
        TypeWire::Limit => OrderType::Limit,
        TypeWire::Market => OrderType::Market,
    };
    // A market order cannot rest, so its natural default is immediate.
    let tif = match (request.tif, order_type) {
        (Some(TifWire::Gtc), _) | (None, OrderType::Limit) => TimeInForce::Gtc,
        (Some(TifWire::Ioc), _) | (None, OrderType::Market) => TimeInForce::Ioc,
        (Some(TifWire::Fok), _) => TimeInForce::Fok,
    };
    let client_order_id = match &request.client_order_id {
        Some(text) => identifier("client_order_id", text)?,
        None => identifier("client_order_id", &crate::server::random_hex(16))?,
    };
    Ok(Command::Place(Place {
        account,
        client_order_id,
        symbol: identifier("symbol", &request.symbol)?,
        side: match request.side {
            SideWire::Buy => Side::Buy,
            SideWire::Sell => Side::Sell,
        },
        order_type,
        price: optional_decimal("price", request.price.as_deref())?,
        qty: decimal("qty", &request.qty)?,
        tif,
        post_only: request.post_only.unwrap_or(false),
        stp: match request.stp.unwrap_or(StpWire::CancelNewest) {
            StpWire::CancelNewest => SelfTradePrevention::CancelNewest,
            StpWire::CancelOldest => SelfTradePrevention::CancelOldest,
            StpWire::CancelBoth => SelfTradePrevention::CancelBoth,
            StpWire::Decrement => SelfTradePrevention::Decrement,
        },
    }))
}

pub fn by_client_id(client_order_id: &str) -> Result<OrderRef, ApiError> {
    identifier("client_order_id", client_order_id).map(OrderRef::Client)
}

pub fn cancel(account: AccountId, order: OrderRef) -> Command {
    Command::Cancel(Cancel { account, order })
}

pub fn replace(
    account: AccountId,
    order: OrderRef,
    request: ReplaceRequest,
) -> Result<Command, ApiError> {
    Ok(Command::Replace(Replace {
        account,
        order,
        new_client_order_id: request
            .new_client_order_id
            .as_deref()
            .map(|text| identifier("new_client_order_id", text))
            .transpose()?,
        price: optional_decimal("price", request.price.as_deref())?,
        qty: optional_decimal("qty", request.qty.as_deref())?,
    }))
}

pub fn mass_cancel(account: AccountId, symbol: Option<&str>) -> Result<Command, ApiError> {
    let symbol = symbol.map(|s| identifier("symbol", s)).transpose()?;
    Ok(Command::MassCancel(MassCancel { account, symbol }))
}

pub fn entry(command: Command) -> LogEntry {
    // The sequencer stamps the time.
    LogEntry::Core(Stamped { ts: 0, command })
}

/// Enqueues `entry` now and returns a future for its result. Enqueuing
/// before the first `.await` elsewhere keeps a connection's commands in the
/// order it sent them even when their results are awaited concurrently.
pub async fn submit_in_order(
    handle: &Handle,
    entry: LogEntry,
) -> impl Future<Output = Result<Arc<Applied>, SubmitError>> + Send + 'static {
    let handle = handle.clone();
    let mut pending = Box::pin(async move { handle.submit(entry).await });
    // The first poll runs `submit` up to its wait for the reply: the entry is
    // in the queue (or refused) when this returns.
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(pending.as_mut().poll(cx))).await;
    async move {
        match first {
            std::task::Poll::Ready(result) => result,
            std::task::Poll::Pending => pending.await,
        }
    }
}

/// The first refusal among a command's events (a refused command emits
/// only that).
pub fn rejection(events: &[Event]) -> Option<RejectReason> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Rejected { reason, .. } => Some(*reason),
        _ => None,
    })
}

/// What kind of answer a command gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Place,
    Cancel,
    Replace,
    MassCancel,
    Other,
}

impl Op {
    pub fn of(command: &Command) -> Op {
        match command {
            Command::Place(_) => Op::Place,
            Command::Cancel(_) => Op::Cancel,
            Command::Replace(_) => Op::Replace,
            Command::MassCancel(_) => Op::MassCancel,
            _ => Op::Other,
        }
    }

    /// The answer to a command from the events it caused: the order (with
    /// this command's fills) or the ids a mass cancel took off the books.
    pub async fn respond(self, handle: &Handle, applied: &Applied) -> Result<Value, ApiError> {
        let events = &applied.events;
        match (self, rejection(events)) {
            // An account that never held funds has no orders: nothing to do.
            (Op::MassCancel, Some(RejectReason::UnknownAccount)) => {
                return Ok(json!({ "canceled": [] }))
            }
            (_, Some(reason)) => return Err(ApiError::reject(reason)),
            _ => {}
        }
        match self {
            Op::Place => {
                let mut scratch = History::default();
                scratch.record(events);
                let placed = events.iter().find_map(|e| match &e.kind {
                    EventKind::Accepted { order_id, .. } => scratch.order(*order_id),
                    _ => None,
                });
                match placed {
                    Some(record) => Ok(order_with_fills(record, events)),
                    None => Err(ApiError::new(
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        "internal",
                        "the order was neither accepted nor rejected",
                    )),
                }
            }
            Op::Cancel | Op::Replace => {
                let Some(order_id) = events.iter().find_map(|e| match &e.kind {
                    EventKind::Canceled { order_id, .. } | EventKind::Replaced { order_id, .. } => {
                        Some(*order_id)
                    }
                    _ => None,
                }) else {
                    return Err(ApiError::unknown_order());
                };
                // The record as it stands now: at least as new as this command.
                let record = handle
                    .query(move |s| s.history.order(order_id).cloned())
                    .await?;
                Ok(match record {
                    Some(record) => order_with_fills(&record, events),
                    None => json!({ "order_id": order_id, "fills": fills_json(events, order_id) }),
                })
            }
            Op::MassCancel => {
                let ids: Vec<OrderId> = events
                    .iter()
                    .filter_map(|e| match &e.kind {
                        EventKind::Canceled { order_id, .. } => Some(*order_id),
                        _ => None,
                    })
                    .collect();
                Ok(json!({ "canceled": ids }))
            }
            Op::Other => Ok(json!({ "index": applied.index })),
        }
    }
}

/// Sequences one command and answers it (REST's whole path).
pub async fn execute(handle: &Handle, command: Command) -> Result<Value, ApiError> {
    let op = Op::of(&command);
    let applied = handle.submit(entry(command)).await?;
    op.respond(handle, &applied).await
}

pub fn order_json(record: &OrderRecord) -> Value {
    let remaining = if record.status.is_open() {
        record.qty.saturating_sub(record.filled_qty)
    } else {
        0
    };
    json!({
        "order_id": record.order_id,
        "client_order_id": record.client_order_id,
        "symbol": record.symbol,
        "side": record.side,
        "type": record.order_type,
        "price": record.price.map(format_units),
        "qty": format_units(record.qty),
        "filled_qty": format_units(record.filled_qty),
        "remaining_qty": format_units(remaining),
        "status": record.status,
        "tif": record.tif,
        "created_ts": record.created_ts,
        "updated_ts": record.updated_ts,
    })
}

pub fn fill_json(fill: &Fill) -> Value {
    json!({
        "trade_id": fill.trade_id,
        "order_id": fill.order_id,
        "symbol": fill.symbol,
        "side": fill.side,
        "price": format_units(fill.price),
        "qty": format_units(fill.qty),
        "fee": format_signed_units(fill.fee),
        "liquidity": fill.liquidity,
        "ts": fill.ts,
    })
}

/// The fills one event gives `account`: the history projection's reading
/// of a trade, so fills look the same live and after the fact.
fn fills_of_event(event: &Event, account: AccountId) -> Vec<Fill> {
    let EventKind::Trade {
        maker_account,
        taker_account,
        ..
    } = &event.kind
    else {
        return Vec::new();
    };
    if *maker_account != account && *taker_account != account {
        return Vec::new();
    }
    let mut scratch = History::default();
    scratch.record(std::slice::from_ref(event));
    let mut fills: Vec<Fill> = scratch
        .fills_of(account, None, 2)
        .into_iter()
        .cloned()
        .collect();
    fills.reverse();
    fills
}

fn fills_json(events: &[Event], order_id: OrderId) -> Vec<Value> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Trade {
                maker_order_id,
                maker_account,
                taker_order_id,
                taker_account,
                ..
            } => {
                if *maker_order_id == order_id {
                    Some(fills_of_event(e, *maker_account))
                } else if *taker_order_id == order_id {
                    Some(fills_of_event(e, *taker_account))
                } else {
                    None
                }
            }
            _ => None,
        })
        .flatten()
        .filter(|f| f.order_id == order_id)
        .map(|f| fill_json(&f))
        .collect()
}

fn order_with_fills(record: &OrderRecord, events: &[Event]) -> Value {
    let mut body = order_json(record);
    body["fills"] = Value::Array(fills_json(events, record.order_id));
    body
}

fn order_update(event: &Event, name: &str, fields: Value) -> Value {
    let mut message = json!({ "type": "order", "event": name, "seq": event.seq, "ts": event.ts });
    if let (Some(message), Value::Object(fields)) = (message.as_object_mut(), fields) {
        message.extend(fields);
    }
    message
}

/// The WebSocket private stream: this account's order updates and fills
/// among one entry's events, in event order.
pub fn private_messages(events: &[Event], account: AccountId) -> Vec<Value> {
    let mut out = Vec::new();
    for event in events {
        match &event.kind {
            EventKind::Accepted {
                account: owner, client_order_id, order_id, symbol, side, order_type, price, qty, tif, post_only, stp,
            } if *owner == account => out.push(order_update(
                event,
                "accepted",
                json!({
                    "order_id": order_id, "client_order_id": client_order_id.as_str(), "symbol": symbol.as_str(),
                    "side": side.as_str(), "order_type": order_type.as_str(), "price": price.map(format_units),
                    "qty": format_units(*qty), "tif": tif.as_str(), "post_only": post_only, "stp": stp.as_str(),
                }),
            )),
            EventKind::Rejected { account: Some(owner), command, client_order_id, order_id, symbol, reason }
                if *owner == account =>
            {
                out.push(order_update(
                    event,
                    "rejected",
                    json!({
                        "command": command, "order_id": order_id,
                        "client_order_id": client_order_id.as_ref().map(|c| c.as_str()),
                        "symbol": symbol.as_ref().map(|s| s.as_str()),
                        "code": reason.as_str(), "message": reason.message(),
                    }),
                ))
            }
            EventKind::Canceled {
                account: owner, order_id, client_order_id, symbol, reason, canceled_qty, filled_qty, leaves_qty,
            } if *owner == account => out.push(order_update(
                event,
                "canceled",
                json!({
                    "order_id": order_id, "client_order_id": client_order_id.as_str(), "symbol": symbol.as_str(),
                    "reason": reason.as_str(), "canceled_qty": format_units(*canceled_qty),
                    "filled_qty": format_units(*filled_qty), "leaves_qty": format_units(*leaves_qty),
                }),
            )),
            EventKind::Replaced {
                account: owner, order_id, old_client_order_id, client_order_id, symbol, price, qty, leaves_qty,
            } if *owner == account => out.push(order_update(
                event,
                "replaced",
                json!({
                    "order_id": order_id, "old_client_order_id": old_client_order_id.as_str(),
                    "client_order_id": client_order_id.as_str(), "symbol": symbol.as_str(),
                    "price": format_units(*price), "qty": format_units(*qty), "leaves_qty": format_units(*leaves_qty),
                }),
            )),
            EventKind::Expired { account: owner, order_id, client_order_id, symbol, expired_qty, filled_qty }
                if *owner == account =>
            {
                out.push(order_update(
                    event,
                    "expired",
                    json!({
                        "order_id": order_id, "client_order_id": client_order_id.as_str(), "symbol": symbol.as_str(),
                        "expired_qty": format_units(*expired_qty), "filled_qty": format_units(*filled_qty),
                    }),
                ))
            }
            EventKind::Trade { .. } => {
                for fill in fills_of_event(event, account) {
                    let mut message = fill_json(&fill);
                    message["type"] = json!("fill");
                    message["seq"] = json!(event.seq);
                    out.push(message);
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;
