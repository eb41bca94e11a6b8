//! The hand-written text must be the bytes `serde_json` writes for the
//! same answer or message, for any content.

use axum::http::StatusCode;
use exchange_node::history::OrderRecord;
use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::json_strategies::{fill_parts, fill_view, record, text, units, FillParts};
use crate::wire::{AccountFields, OrderUpdate, PrivateMessage, SignedUnits, Units, UpdateFields};
use crate::ws_entry;

fn request_id() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        text().prop_map(Value::from),
        (text(), any::<u64>()).prop_map(|(key, n)| json!({ key: [n, null, true] })),
    ]
}

#[derive(Clone, Debug)]
enum Outcome {
    Order(Box<OrderRecord>, Option<Vec<FillParts>>),
    Bare(u64, Vec<FillParts>),
    Canceled(Vec<u64>),
    Index(u64),
    Refused(u16, String, Option<u64>),
}

fn outcome() -> impl Strategy<Value = Outcome> {
    let fills = || prop::collection::vec(fill_parts(), 0..3);
    prop_oneof![
        (record(), prop::option::of(fills())).prop_map(|(r, f)| Outcome::Order(Box::new(r), f)),
        (any::<u64>(), fills()).prop_map(|(id, f)| Outcome::Bare(id, f)),
        prop::collection::vec(any::<u64>(), 0..4).prop_map(Outcome::Canceled),
        any::<u64>().prop_map(Outcome::Index),
        (400..600u16, text(), prop::option::of(any::<u64>()))
            .prop_map(|(s, m, r)| Outcome::Refused(s, m, r)),
    ]
}

fn views(fills: &[FillParts]) -> Vec<FillView<'_>> {
    fills.iter().map(fill_view).collect()
}

fn result(outcome: &Outcome) -> Result<Answer<'_>, ApiError> {
    Ok(match outcome {
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
        Outcome::Refused(status, message, retry_after) => {
            let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_REQUEST);
            let mut error = ApiError::new(status, "some_code", message.clone());
            error.retry_after = *retry_after;
            return Err(error);
        }
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop::sample::select(vec![
        Op::Place,
        Op::Cancel,
        Op::Replace,
        Op::MassCancel,
        Op::Other,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn a_response_is_written_as_serde_writes_it(
        id in request_id(),
        op in op(),
        outcome in outcome(),
    ) {
        let expected = serde_json::to_string(&ws_entry::response(&id, op, result(&outcome)))
            .expect("serialises");
        let mut text = Vec::new();
        push_response(&mut text, &id, op, &result(&outcome));
        prop_assert_eq!(String::from_utf8(text).expect("UTF-8"), expected);
    }
}

const NAMES: &[&str] = &[
    "order",
    "accepted",
    "buy",
    "cancel_newest",
    "a \"quoted\"\nname",
    "",
];

/// Drawn parts of a private-stream message: two texts, numbers, and
/// which optional fields are there.
struct Parts<'a> {
    a: &'a str,
    b: &'a str,
    n: &'a [u64; 8],
    some: &'a [bool; 9],
}

impl Parts<'_> {
    fn name(&self, i: usize) -> &'static str {
        NAMES[(self.n[i] % NAMES.len() as u64) as usize]
    }

    fn opt(&self, i: usize) -> Option<u64> {
        self.some[i].then_some(self.n[i])
    }
}

/// A private-stream message of kind `kind` (0 to 7).
fn private<'a>(kind: usize, p: &Parts<'a>) -> Message<'a> {
    let update = |fields| {
        PrivateMessage::Order(OrderUpdate {
            kind: "order",
            event: p.name(7),
            seq: p.n[6],
            ts: p.n[7],
            fields,
        })
    };
    match kind {
        0 => update(accepted(p)),
        1..=5 => update(other_update(kind, p)),
        6 => PrivateMessage::Fill {
            kind: "fill",
            seq: p.n[0],
            fill: FillView {
                trade_id: p.n[1],
                order_id: p.n[2],
                symbol: p.a,
                side: p.b,
                price: Units(p.n[3]),
                qty: Units(p.n[4]),
                fee: SignedUnits(p.n[5] as i64),
                liquidity: p.name(6),
                ts: p.n[7],
            },
        },
        _ => PrivateMessage::Account {
            kind: "account",
            event: p.name(0),
            seq: p.n[1],
            ts: p.n[2],
            fields: if p.some[0] {
                AccountFields::Status {
                    status: p.name(3),
                    canceled: p.n[4] as u32,
                }
            } else {
                AccountFields::Mmp {
                    symbol: p.a,
                    state: p.name(3),
                    filled_qty: p.opt(1).map(Units),
                    fills: p.opt(2).map(|fills| fills as u32),
                }
            },
        },
    }
}

fn accepted<'a>(p: &Parts<'a>) -> UpdateFields<'a> {
    UpdateFields::Accepted {
        order_id: p.n[0],
        client_order_id: p.a,
        symbol: p.b,
        side: p.name(1),
        order_type: p.name(2),
        price: p.opt(3).map(Units),
        qty: Units(p.n[4]),
        tif: p.name(5),
        post_only: p.some[8],
        stp: p.name(3),
        stop_price: p.opt(1).map(Units),
        trailing_amount: p.opt(2).map(Units),
        trailing_bps: p.opt(3).map(|bps| bps as u32),
        oco_with: p.some[4].then_some(p.b),
        display_qty: p.opt(5).map(Units),
        funds: p.opt(6).map(Units),
        expire_ts: p.opt(7),
        hidden: p.n[7] % 2 == 1,
        min_qty: p.opt(4).filter(|n| n % 3 == 0).map(Units),
    }
}

/// A triggered, rejected, canceled, replaced or expired order (1 to 5).
fn other_update<'a>(kind: usize, p: &Parts<'a>) -> UpdateFields<'a> {
    let (a, b, n) = (p.a, p.b, p.n);
    match kind {
        1 => UpdateFields::Triggered {
            order_id: n[0],
            client_order_id: a,
            symbol: b,
            stop_price: Units(n[1]),
            last_price: Units(n[2]),
            qty: Units(n[3]),
        },
        2 => UpdateFields::Rejected {
            command: p.name(1),
            order_id: p.opt(0),
            client_order_id: p.some[1].then_some(a),
            symbol: p.some[2].then_some(b),
            code: p.name(2),
            message: p.name(3),
        },
        3 => UpdateFields::Canceled {
            order_id: n[0],
            client_order_id: a,
            symbol: b,
            reason: p.name(1),
            canceled_qty: Units(n[2]),
            filled_qty: Units(n[3]),
            leaves_qty: Units(n[4]),
        },
        4 => UpdateFields::Replaced {
            order_id: n[0],
            old_client_order_id: b,
            client_order_id: a,
            symbol: b,
            price: Units(n[1]),
            qty: Units(n[2]),
            leaves_qty: Units(n[3]),
            stop_price: p.opt(4).map(Units),
        },
        _ => UpdateFields::Expired {
            order_id: n[0],
            client_order_id: a,
            symbol: b,
            expired_qty: Units(n[1]),
            filled_qty: Units(n[2]),
        },
    }
}

type Message<'a> = PrivateMessage<'a>;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn a_private_message_is_written_as_serde_writes_it(
        kind in 0..8usize,
        texts in (text(), text()),
        n in prop::array::uniform8(units()),
        some in prop::array::uniform9(any::<bool>()),
    ) {
        let parts = Parts { a: &texts.0, b: &texts.1, n: &n, some: &some };
        let message = private(kind, &parts);
        let expected = serde_json::to_string(&message).expect("serialises");
        let mut text = Vec::new();
        push_private(&mut text, &message);
        prop_assert_eq!(String::from_utf8(text).expect("UTF-8"), expected);
    }
}
