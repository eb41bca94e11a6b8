//! The hand-written REST answers must be the bytes the handlers wrote
//! through `serde_json` (the answer made a `Value`, then written by
//! axum's `Json`), for any content.

use axum::http::StatusCode;
use exchange_marketdata::json as market_json;
use exchange_node::history::{Fill, OrderRecord};
use exchange_types::{format_units, RejectReason, UNITS_PER_WHOLE};
use proptest::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};

use super::*;
use crate::error::ApiError;
use crate::json_strategies::{balance, candle, fill_parts, fill_view, record, text, FillParts};
use crate::translate;
use crate::wire::{SignedUnits, Units};

/// What the handlers answered before: the value, then its text.
fn through_value(answer: &impl Serialize) -> String {
    let value = serde_json::to_value(answer).expect("a value");
    String::from_utf8(serde_json::to_vec(&value).expect("serialises")).expect("UTF-8")
}

fn text_of(body: JsonText) -> String {
    String::from_utf8(body.0).expect("UTF-8")
}

#[derive(Clone, Debug)]
enum Outcome {
    Order(Box<OrderRecord>, Option<Vec<FillParts>>),
    Bare(u64, Vec<FillParts>),
    Canceled(Vec<u64>),
    Index(u64),
}

fn outcome() -> impl Strategy<Value = Outcome> {
    let fills = || prop::collection::vec(fill_parts(), 0..3);
    prop_oneof![
        (record(), prop::option::of(fills())).prop_map(|(r, f)| Outcome::Order(Box::new(r), f)),
        (any::<u64>(), fills()).prop_map(|(id, f)| Outcome::Bare(id, f)),
        prop::collection::vec(any::<u64>(), 0..4).prop_map(Outcome::Canceled),
        any::<u64>().prop_map(Outcome::Index),
    ]
}

fn views(fills: &[FillParts]) -> Vec<FillView<'_>> {
    fills.iter().map(fill_view).collect()
}

fn answer(outcome: &Outcome) -> Answer<'_> {
    match outcome {
        Outcome::Order(record, fills) => {
            Answer::Order(OrderView::new(record, fills.as_deref().map(views)))
        }
        Outcome::Bare(order_id, fills) => Answer::Bare {
            order_id: *order_id,
            fills: views(fills),
        },
        Outcome::Canceled(ids) => Answer::Canceled {
            canceled: ids.clone(),
        },
        Outcome::Index(index) => Answer::Index { index: *index },
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn an_answer_is_written_as_serde_wrote_it(outcome in outcome()) {
        let answer = answer(&outcome);
        prop_assert_eq!(text_of(JsonText::answer(&answer)), through_value(&answer));
    }

    #[test]
    fn an_order_read_is_written_as_serde_wrote_it(record in record()) {
        let expected = through_value(&translate::order_json(&record));
        prop_assert_eq!(text_of(JsonText::order(&record)), expected);
    }

    #[test]
    fn a_list_of_orders_is_written_as_serde_wrote_it(
        records in prop::collection::vec(record(), 0..4),
    ) {
        let orders: Vec<Value> = records.iter().map(translate::order_json).collect();
        let expected = through_value(&json!({ "orders": orders }));
        prop_assert_eq!(text_of(JsonText::orders(records.iter())), expected);
    }
}

fn fill(parts: &FillParts) -> Fill {
    let ((symbol, side, liquidity), n) = parts.clone();
    Fill {
        trade_id: n.0,
        order_id: n.1,
        symbol,
        side,
        price: n.2,
        qty: n.3,
        fee: n.4,
        liquidity,
        ts: n.5,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn a_refusal_is_written_as_serde_wrote_it(code in text(), message in text()) {
        let expected = through_value(&json!({ "code": code, "message": message }));
        prop_assert_eq!(text_of(JsonText::error(&code, &message)), expected);
    }

    #[test]
    fn balances_are_written_as_serde_wrote_them(
        account in any::<u64>(),
        balances in prop::collection::vec(balance(), 0..4),
    ) {
        let values: Vec<Value> = balances
            .iter()
            .map(|b| {
                json!({ "asset": b.asset.as_str(), "total": format_units(b.total),
                    "available": format_units(b.available) })
            })
            .collect();
        let expected = through_value(&json!({ "account_id": account, "balances": values }));
        prop_assert_eq!(text_of(JsonText::balances(account, &balances)), expected);
    }

    #[test]
    fn fills_are_written_as_serde_wrote_them(
        parts in prop::collection::vec(fill_parts(), 0..4),
    ) {
        let fills: Vec<Fill> = parts.iter().map(fill).collect();
        let values: Vec<Value> = fills.iter().map(translate::fill_json).collect();
        let expected = through_value(&json!({ "fills": values }));
        let views: Vec<FillView<'_>> = fills.iter().map(FillView::from).collect();
        prop_assert_eq!(text_of(JsonText::fills(&views)), expected);
    }

    #[test]
    fn candles_are_written_as_serde_wrote_them(
        symbol in text(),
        interval in text(),
        candles in prop::collection::vec(candle(), 0..4),
    ) {
        let values: Vec<Value> = candles.iter().map(market_json::candle_value).collect();
        let expected = through_value(
            &json!({ "symbol": symbol, "interval": interval, "candles": values }),
        );
        prop_assert_eq!(text_of(JsonText::candles(&symbol, &interval, &candles)), expected);
    }
}

/// What a refused order is answered, through the response itself.
#[tokio::test]
async fn a_refusal_answers_its_code_and_message() {
    let response = ApiError::reject(RejectReason::InsufficientFunds).into_response();
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    assert_eq!(
        content_type,
        Some(HeaderValue::from_static("application/json"))
    );
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("a body");
    let expected = json!({
        "code": "insufficient_funds",
        "message": RejectReason::InsufficientFunds.message(),
    });
    assert_eq!(
        String::from_utf8_lossy(&body),
        format!(
            r#"{{"code":"insufficient_funds","message":{}}}"#,
            json!(RejectReason::InsufficientFunds.message())
        )
    );
    assert_eq!(String::from_utf8_lossy(&body), through_value(&expected));
}

/// One answer spelled out, so a change of the order of the members shows
/// here as well as against `serde_json`.
#[test]
fn members_come_in_the_order_of_their_keys() {
    let fill = FillView {
        trade_id: 9,
        order_id: 7,
        symbol: "BTC-USD",
        side: "buy",
        price: Units(100 * UNITS_PER_WHOLE),
        qty: Units(UNITS_PER_WHOLE / 4),
        fee: SignedUnits(-1),
        liquidity: "taker",
        ts: 5,
    };
    let answer = Answer::Bare {
        order_id: 7,
        fills: vec![fill],
    };
    assert_eq!(
        text_of(JsonText::answer(&answer)),
        concat!(
            r#"{"fills":[{"fee":"-0.00000001","liquidity":"taker","order_id":7,"#,
            r#""price":"100","qty":"0.25","side":"buy","symbol":"BTC-USD","trade_id":9,"#,
            r#""ts":5}],"order_id":7}"#
        )
    );
}

#[test]
fn the_body_is_answered_as_json() {
    let response = JsonText(b"{}".to_vec()).into_response();
    assert_eq!(
        response
            .headers()
            .get(CONTENT_TYPE)
            .map(HeaderValue::as_bytes),
        Some(&b"application/json"[..])
    );
}
