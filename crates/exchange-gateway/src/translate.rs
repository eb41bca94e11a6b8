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
    order_updates, AccountId, Cancel, Change, Command, Dec, Event, EventKind, MassCancel, OrderId,
    OrderRef, OrderType, Place, PlaceExt, RejectReason, Replace, SelfTradePrevention, Side,
    Stamped, TimeInForce, Trailing,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ApiError;
use super::replay::RequestGuard;
use super::rest_text::JsonText;
use super::wire::{self, FillView, OrderView};
use exchange_node::entry::LogEntry;
use exchange_node::history::{Fill, OrderRecord};
use exchange_node::sequencer::{Handle, SubmitError};
use exchange_node::state::Applied;

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
    Stop,
    StopLimit,
    MarketToLimit,
    MarketIfTouched,
    LimitIfTouched,
    Midpoint,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum TifWire {
    Gtc,
    Ioc,
    Fok,
    Day,
    Gtd,
    AtOpen,
    AtClose,
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
    /// Trigger price of a `stop` or `stop_limit` order.
    stop_price: Option<String>,
    /// A good-till-date order's expire time, nanoseconds of log time.
    #[serde(default)]
    expire_ts: Option<u64>,
    /// A trailing stop's distance as a price amount...
    trailing_amount: Option<String>,
    /// ...or in basis points of the last price.
    trailing_bps: Option<u32>,
    /// Client order id of an open order of the account to pair with
    /// (one-cancels-other).
    oco_with: Option<String>,
    /// An iceberg's shown quantity.
    #[serde(default)]
    display_qty: Option<String>,
    /// A market buy's quote amount; `qty` is then "0".
    #[serde(default)]
    funds: Option<String>,
    /// Minimum acceptable quantity: fill at least this on entry or none.
    #[serde(default)]
    min_qty: Option<String>,
    /// A hidden (non-displayed) limit order.
    #[serde(default)]
    hidden: Option<bool>,
}

/// `POST /v1/orders/{id}/replace` and the WebSocket `replace` message.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceRequest {
    price: Option<String>,
    qty: Option<String>,
    new_client_order_id: Option<String>,
    /// A new trigger for an untriggered stop or stop-limit order.
    stop_price: Option<String>,
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

fn optional_identifier<const N: usize>(
    field: &str,
    text: Option<&str>,
) -> Result<Option<InlineStr<N>>, ApiError> {
    text.map(|t| identifier(field, t)).transpose()
}

pub fn place(account: AccountId, request: PlaceRequest) -> Result<Command, ApiError> {
    place_fields(account, &request.fields())
}

/// A place's fields, borrowed from wherever they were read.
struct PlaceFields<'a> {
    symbol: &'a str,
    side: SideWire,
    order_type: Option<TypeWire>,
    price: Option<&'a str>,
    qty: &'a str,
    tif: Option<TifWire>,
    post_only: Option<bool>,
    stp: Option<StpWire>,
    client_order_id: Option<&'a str>,
    stop_price: Option<&'a str>,
    expire_ts: Option<u64>,
    trailing_amount: Option<&'a str>,
    trailing_bps: Option<u32>,
    oco_with: Option<&'a str>,
    display_qty: Option<&'a str>,
    funds: Option<&'a str>,
    min_qty: Option<&'a str>,
    hidden: Option<bool>,
}

impl PlaceRequest {
    fn fields(&self) -> PlaceFields<'_> {
        PlaceFields {
            symbol: &self.symbol,
            side: self.side,
            order_type: self.order_type,
            price: self.price.as_deref(),
            qty: &self.qty,
            tif: self.tif,
            post_only: self.post_only,
            stp: self.stp,
            client_order_id: self.client_order_id.as_deref(),
            stop_price: self.stop_price.as_deref(),
            expire_ts: self.expire_ts,
            trailing_amount: self.trailing_amount.as_deref(),
            trailing_bps: self.trailing_bps,
            oco_with: self.oco_with.as_deref(),
            display_qty: self.display_qty.as_deref(),
            funds: self.funds.as_deref(),
            min_qty: self.min_qty.as_deref(),
            hidden: self.hidden,
        }
    }
}

fn place_fields(account: AccountId, request: &PlaceFields<'_>) -> Result<Command, ApiError> {
    let order_type = match request.order_type.unwrap_or(TypeWire::Limit) {
        TypeWire::Limit => OrderType::Limit,
        TypeWire::Market => OrderType::Market,
        TypeWire::Stop => OrderType::Stop,
        TypeWire::StopLimit => OrderType::StopLimit,
        TypeWire::MarketToLimit => OrderType::MarketToLimit,
        TypeWire::MarketIfTouched => OrderType::MarketIfTouched,
        TypeWire::LimitIfTouched => OrderType::LimitIfTouched,
        TypeWire::Midpoint => OrderType::Midpoint,
    };
    // A market order cannot rest, so its natural default is immediate.
    let tif = match (request.tif, order_type) {
        (Some(TifWire::Gtc), _)
        | (
            None,
            OrderType::Limit
            | OrderType::Stop
            | OrderType::StopLimit
            | OrderType::MarketToLimit
            | OrderType::MarketIfTouched
            | OrderType::LimitIfTouched
            | OrderType::Midpoint,
        ) => TimeInForce::Gtc,
        (Some(TifWire::Ioc), _) | (None, OrderType::Market) => TimeInForce::Ioc,
        (Some(TifWire::Fok), _) => TimeInForce::Fok,
        (Some(TifWire::Day), _) => TimeInForce::Day,
        (Some(TifWire::Gtd), _) => TimeInForce::Gtd,
        (Some(TifWire::AtOpen), _) => TimeInForce::AtOpen,
        (Some(TifWire::AtClose), _) => TimeInForce::AtClose,
    };
    let client_order_id = match request.client_order_id {
        Some(text) => identifier("client_order_id", text)?,
        None => identifier("client_order_id", &exchange_node::random_hex(16))?,
    };
    Ok(Command::Place(Place {
        account,
        client_order_id,
        symbol: identifier("symbol", request.symbol)?,
        side: match request.side {
            SideWire::Buy => Side::Buy,
            SideWire::Sell => Side::Sell,
        },
        order_type,
        price: optional_decimal("price", request.price)?,
        qty: decimal("qty", request.qty)?,
        tif,
        post_only: request.post_only.unwrap_or(false),
        stp: match request.stp.unwrap_or(StpWire::CancelNewest) {
            StpWire::CancelNewest => SelfTradePrevention::CancelNewest,
            StpWire::CancelOldest => SelfTradePrevention::CancelOldest,
            StpWire::CancelBoth => SelfTradePrevention::CancelBoth,
            StpWire::Decrement => SelfTradePrevention::Decrement,
        },
        ext: place_ext(request)?,
    }))
}

/// The stop and pair fields of a place, boxed only when one is given (the
/// core refuses each where it does not apply, with its own reason).
fn place_ext(request: &PlaceFields<'_>) -> Result<Option<Box<PlaceExt>>, ApiError> {
    let trailing = match (request.trailing_amount, request.trailing_bps) {
        (None, None) => None,
        (Some(amount), None) => Some(Trailing::Amount(decimal("trailing_amount", amount)?)),
        (None, Some(bps)) => Some(Trailing::Bps(bps)),
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request(
                "invalid_value",
                "give `trailing_amount` or `trailing_bps`, not both",
            ))
        }
    };
    let ext = PlaceExt {
        stop_price: optional_decimal("stop_price", request.stop_price)?,
        expire_ts: request.expire_ts,
        trailing,
        oco_with: optional_identifier("oco_with", request.oco_with)?,
        display_qty: optional_decimal("display_qty", request.display_qty)?,
        funds: optional_decimal("funds", request.funds)?,
        min_qty: optional_decimal("min_qty", request.min_qty)?,
        hidden: request.hidden.unwrap_or(false),
    };
    Ok((ext != PlaceExt::default()).then(|| Box::new(ext)))
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
    Ok(Command::replace(
        Replace {
            account,
            order,
            new_client_order_id: optional_identifier(
                "new_client_order_id",
                request.new_client_order_id.as_deref(),
            )?,
            price: optional_decimal("price", request.price.as_deref())?,
            qty: optional_decimal("qty", request.qty.as_deref())?,
        },
        optional_decimal("stop_price", request.stop_price.as_deref())?,
    ))
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
        EventKind::Rejected(rejected) => Some(rejected.reason),
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

/// The body of a successful answer.
// One per response, built and serialised at once: not worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Serialize)]
#[serde(untagged)]
pub enum Answer<'a> {
    /// The order with this command's fills.
    Order(OrderView<'a>),
    /// An order no longer in the history (only its id and fills).
    Bare {
        order_id: OrderId,
        fills: Vec<FillView<'a>>,
    },
    /// What a mass cancel took off the books.
    Canceled {
        canceled: Vec<OrderId>,
    },
    Index {
        index: u64,
    },
}

impl Op {
    pub fn of(command: &Command) -> Op {
        match command {
            Command::Place(_) => Op::Place,
            Command::Cancel(_) => Op::Cancel,
            Command::Replace(_) | Command::ReplaceStop(_) => Op::Replace,
            Command::MassCancel(_) => Op::MassCancel,
            _ => Op::Other,
        }
    }

    /// The answer to a command from the events it caused: the order (with
    /// this command's fills) or the ids a mass cancel took off the books,
    /// as REST's body.
    pub fn respond(self, applied: &Applied) -> Result<JsonText, ApiError> {
        self.answer(applied).map(|answer| JsonText::answer(&answer))
    }

    /// As [`Op::respond`], before it becomes JSON. The order comes as the
    /// entry left it (recorded on the core thread, [`Applied::order`]).
    pub fn answer(self, applied: &Applied) -> Result<Answer<'_>, ApiError> {
        let events = &applied.events;
        match (self, rejection(events)) {
            // An account that never held funds has no orders: nothing to do.
            (Op::MassCancel, Some(RejectReason::UnknownAccount)) => {
                return Ok(Answer::Canceled {
                    canceled: Vec::new(),
                })
            }
            (_, Some(reason)) => return Err(ApiError::reject(reason)),
            _ => {}
        }
        let order = |order_id: OrderId| {
            let fills = wire::fills_of_order(events, order_id);
            match applied.order.as_deref().filter(|r| r.order_id == order_id) {
                Some(record) => Answer::Order(OrderView::new(record, Some(fills))),
                None => Answer::Bare { order_id, fills },
            }
        };
        match self {
            Op::Place => changed(events, |c| matches!(c, Change::New(_)))
                .next()
                .map(order)
                .ok_or_else(|| {
                    ApiError::new(
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        "internal",
                        "the order was neither accepted nor rejected",
                    )
                }),
            Op::Cancel | Op::Replace => changed(events, |c| {
                matches!(c, Change::Canceled(_) | Change::Replaced(_))
            })
            .next()
            .map(order)
            .ok_or_else(ApiError::unknown_order),
            Op::MassCancel => Ok(Answer::Canceled {
                canceled: changed(events, |c| matches!(c, Change::Canceled(_))).collect(),
            }),
            Op::Other => Ok(Answer::Index {
                index: applied.index,
            }),
        }
    }
}

/// The orders among `events` that a change of the kind `wanted` reached,
/// in event order.
fn changed(
    events: &[Event],
    wanted: fn(&Change<'_>) -> bool,
) -> impl Iterator<Item = OrderId> + '_ {
    events
        .iter()
        .flat_map(|e| order_updates(&e.kind))
        .filter(move |update| wanted(&update.change))
        .map(|update| update.order_id)
}

/// The core's first stage, run at the edge: an order of the wrong shape is
/// answered as the core would answer it, without a trip through the log.
/// Only shapes are judged here; everything that needs state is the core's.
pub fn validate(command: &Command) -> Result<(), ApiError> {
    match command {
        Command::Place(place) => exchange_types::validate::place(place).map_err(ApiError::reject),
        _ => Ok(()),
    }
}

/// Sequences one command and answers it, read back as a value for a
/// caller that looks into the answer.
pub async fn execute(handle: &Handle, command: Command) -> Result<Value, ApiError> {
    let text = execute_guarded(handle, None, command).await?;
    serde_json::from_slice(&text.0).map_err(|error| {
        ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("an answer that does not read back: {error}"),
        )
    })
}

/// Sequences one command, guarded as a signed write when `guard` is given
/// ([`crate::replay::submit`]), and answers it (REST's whole path).
pub async fn execute_guarded(
    handle: &Handle,
    guard: Option<RequestGuard>,
    command: Command,
) -> Result<JsonText, ApiError> {
    validate(&command)?;
    let op = Op::of(&command);
    let applied = crate::replay::submit(handle, guard, entry(command)).await?;
    op.respond(&applied)
}

pub fn order_json(record: &OrderRecord) -> Value {
    serde_json::to_value(OrderView::new(record, None)).unwrap_or_default()
}

pub fn fill_json(fill: &Fill) -> Value {
    serde_json::to_value(FillView::from(fill)).unwrap_or_default()
}

/// The WebSocket private stream: this account's order updates and fills
/// among one entry's events, in event order (see [`wire::private_messages`]
/// for the text the sockets get).
pub fn private_messages(events: &[Event], account: AccountId) -> Vec<Value> {
    wire::private_messages(events, account)
        .iter()
        .map(|message| serde_json::to_value(message).unwrap_or_default())
        .collect()
}

#[path = "translate_ws.rs"]
mod ws_order;
pub use ws_order::ws_order_entry;

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "translate_stop_tests.rs"]
mod stop_tests;
