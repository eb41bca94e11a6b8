//! The hand-written REST answers must be the bytes the handlers wrote
//! through `serde_json` (the answer made a `Value`, then written by
//! axum's `Json`), for any content.

use exchange_node::history::OrderRecord;
use exchange_types::UNITS_PER_WHOLE;
use proptest::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};

use super::*;
use crate::json_strategies::{fill_parts, fill_view, record, FillParts};
use crate::translate;
use crate::wire::{SignedUnits, Units};

/// What the handlers answered before: the value, then its text.
fn through_value(answer: &impl Serialize) -> String {
    let value = serde_json::to_value(answer).expect("a value");
    String::from_utf8(serde_json::to_vec(&value).expect("serialises")).expect("UTF-8")
}

fn text(body: JsonText) -> String {
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
        prop_assert_eq!(text(JsonText::answer(&answer)), through_value(&answer));
    }

    #[test]
    fn an_order_read_is_written_as_serde_wrote_it(record in record()) {
        let expected = through_value(&translate::order_json(&record));
        prop_assert_eq!(text(JsonText::order(&record)), expected);
    }

    #[test]
    fn a_list_of_orders_is_written_as_serde_wrote_it(
        records in prop::collection::vec(record(), 0..4),
    ) {
        let orders: Vec<Value> = records.iter().map(translate::order_json).collect();
        let expected = through_value(&json!({ "orders": orders }));
        prop_assert_eq!(text(JsonText::orders(records.iter())), expected);
    }
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
        text(JsonText::answer(&answer)),
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
