//! REST's answers written straight to text (order answers and reads,
//! balances, fills, candles, refusals): the bytes axum's `Json` wrote for
//! the same answer once turned into a [`serde_json::Value`].
//! A `Value` keeps an object's members in a sorted map (`serde_json`
//! without `preserve_order`), so REST's members come in the byte order
//! of their keys, not in the order the WebSocket writes them
//! ([`super::wire_text`]); the primitives are shared ([`super::json_text`]).

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use exchange_core::BalanceView;
use exchange_marketdata::Candle;
use exchange_node::history::OrderRecord;

use super::json_text::{
    push_array, push_bool, push_ids, push_signed_units, push_wide_units, Object,
};
use super::translate::Answer;
use super::wire::{FillView, OrderView};

/// Room for a typical order answer with a fill or two, so the buffer is
/// allocated once.
const ANSWER_CAPACITY: usize = 512;

/// A JSON body already written, answered with JSON's content type.
#[derive(Debug)]
pub struct JsonText(pub Vec<u8>);

impl JsonText {
    /// The answer to an order command.
    pub fn answer(answer: &Answer<'_>) -> Self {
        let mut out = Vec::with_capacity(ANSWER_CAPACITY);
        push_answer(&mut out, answer);
        JsonText(out)
    }

    /// One order, as a read of it answers it.
    pub fn order(record: &OrderRecord) -> Self {
        let mut out = Vec::with_capacity(ANSWER_CAPACITY);
        push_order(&mut out, &OrderView::new(record, None));
        JsonText(out)
    }

    /// `{"orders":[...]}`, in the order given.
    pub fn orders<'r>(records: impl ExactSizeIterator<Item = &'r OrderRecord>) -> Self {
        let mut out = Vec::with_capacity(16 + records.len() * ANSWER_CAPACITY / 2);
        let mut object = Object::open(&mut out);
        push_array(object.key("orders"), records, |list, record| {
            push_order(list, &OrderView::new(record, None))
        });
        object.close();
        JsonText(out)
    }

    /// A refusal's body: `{"code":...,"message":...}`.
    pub fn error(code: &str, message: &str) -> Self {
        let mut out = Vec::with_capacity(24 + code.len() + message.len());
        let mut object = Object::open(&mut out);
        object.str("code", code);
        object.str("message", message);
        object.close();
        JsonText(out)
    }

    /// An account's balances, in the order given.
    pub fn balances(account: u64, balances: &[BalanceView]) -> Self {
        let mut out = Vec::with_capacity(32 + balances.len() * 64);
        let mut object = Object::open(&mut out);
        object.u64("account_id", account);
        push_array(object.key("balances"), balances, |list, balance| {
            let mut member = Object::open(list);
            member.str("asset", balance.asset.as_str());
            member.units("available", balance.available);
            member.units("total", balance.total);
            member.close();
        });
        object.close();
        JsonText(out)
    }

    /// `{"fills":[...]}`, in the order given.
    pub fn fills(fills: &[FillView<'_>]) -> Self {
        let mut out = Vec::with_capacity(16 + fills.len() * ANSWER_CAPACITY / 2);
        let mut object = Object::open(&mut out);
        push_fills(object.key("fills"), fills);
        object.close();
        JsonText(out)
    }

    /// A market's candles of one interval, in the order given.
    pub fn candles(symbol: &str, interval: &str, candles: &[Candle]) -> Self {
        let mut out = Vec::with_capacity(48 + candles.len() * 160);
        let mut object = Object::open(&mut out);
        push_array(object.key("candles"), candles, |list, candle| {
            let mut member = Object::open(list);
            member.units("close", candle.close);
            member.units("high", candle.high);
            member.units("low", candle.low);
            member.units("open", candle.open);
            member.u64("start", candle.start);
            member.u64("trades", candle.trades);
            push_wide_units(member.key("volume"), candle.volume);
            member.close();
        });
        object.str("interval", interval);
        object.str("symbol", symbol);
        object.close();
        JsonText(out)
    }
}

impl IntoResponse for JsonText {
    fn into_response(self) -> Response {
        let mut response = Body::from(self.0).into_response();
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }
}

/// An [`Answer`], as its untagged serialisation writes it.
pub fn push_answer(out: &mut Vec<u8>, answer: &Answer<'_>) {
    match answer {
        Answer::Order(order) => push_order(out, order),
        Answer::Bare { order_id, fills } => {
            let mut object = Object::open(out);
            push_fills(object.key("fills"), fills);
            object.u64("order_id", *order_id);
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

/// An order with its rarer parts (flattened into it) and its fills, if
/// any, each member in its key's place.
pub fn push_order(out: &mut Vec<u8>, order: &OrderView<'_>) {
    let details = order.details.as_ref();
    let units = |field: Option<super::wire::Units>| field.map(|units| units.0);
    let mut object = Object::open(out);
    object.str("client_order_id", order.client_order_id);
    object.u64("created_ts", order.created_ts);
    object.some_units("display_qty", units(details.and_then(|d| d.display_qty)));
    object.some_u64("expire_ts", details.and_then(|d| d.expire_ts));
    object.units("filled_qty", order.filled_qty.0);
    if let Some(fills) = &order.fills {
        push_fills(object.key("fills"), fills);
    }
    object.some_units("funds", units(details.and_then(|d| d.funds)));
    if details.is_some_and(|d| d.hidden) {
        push_bool(object.key("hidden"), true);
    }
    object.some_units("min_qty", units(details.and_then(|d| d.min_qty)));
    if let Some(oco_with) = details.and_then(|d| d.oco_with) {
        object.str("oco_with", oco_with);
    }
    object.u64("order_id", order.order_id);
    match order.price {
        Some(price) => object.units("price", price.0),
        None => object.key("price").extend_from_slice(b"null"),
    }
    object.units("qty", order.qty.0);
    object.units("remaining_qty", order.remaining_qty.0);
    object.str("side", order.side);
    object.str("status", order.status.as_str());
    object.some_units("stop_price", units(details.and_then(|d| d.stop_price)));
    object.str("symbol", order.symbol);
    object.str("tif", order.tif);
    let trailing_amount = details.and_then(|d| d.trailing_amount);
    object.some_units("trailing_amount", units(trailing_amount));
    object.some_u64(
        "trailing_bps",
        details.and_then(|d| d.trailing_bps).map(u64::from),
    );
    object.some_units(
        "triggered_price",
        units(details.and_then(|d| d.triggered_price)),
    );
    object.some_u64("triggered_ts", details.and_then(|d| d.triggered_ts));
    object.str("type", order.order_type);
    object.u64("updated_ts", order.updated_ts);
    object.close();
}

fn push_fills(out: &mut Vec<u8>, fills: &[FillView<'_>]) {
    push_array(out, fills, |out, fill| {
        let mut object = Object::open(out);
        push_signed_units(object.key("fee"), fill.fee.0);
        object.str("liquidity", fill.liquidity);
        object.u64("order_id", fill.order_id);
        object.units("price", fill.price.0);
        object.units("qty", fill.qty.0);
        object.str("side", fill.side);
        object.str("symbol", fill.symbol);
        object.u64("trade_id", fill.trade_id);
        object.u64("ts", fill.ts);
        object.close();
    });
}

#[cfg(test)]
#[path = "rest_text_tests.rs"]
mod tests;
