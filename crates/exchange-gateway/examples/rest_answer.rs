//! What writing a REST order answer costs, `serde_json` (the answer made a
//! `Value`, then written, as axum's `Json` wrote it) against the writer by
//! hand: `cargo run --release -p exchange-gateway --example rest_answer`.
//!
//! Two answers: a limit order that took one fill (a place's answer) and a
//! resting stop-limit with its details and no fills (a read of one
//! order). Rounds alternate which writer goes first, so a slow moment of a
//! shared machine falls on both. Figures go to BENCHMARKS.md.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "a timing harness: the clock never reaches the engine"
)]

use std::hint::black_box;
use std::time::Instant;

use exchange_gateway::rest_text::JsonText;
use exchange_gateway::translate::Answer;
use exchange_gateway::wire::{FillView, OrderView, SignedUnits, Units};
use exchange_node::history::{OrderDetails, OrderRecord, OrderStatus};
use exchange_types::ids::InlineStr;
use exchange_types::{OrderType, Side, TimeInForce, UNITS_PER_WHOLE};

/// The server's allocator: `serde_json`'s value allocates per member.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ANSWERS: u32 = 200_000;
const ROUNDS: usize = 10;

fn record(order_type: OrderType, details: Option<Box<OrderDetails>>) -> OrderRecord {
    OrderRecord {
        order_id: 1_234_567,
        account: 42,
        client_order_id: InlineStr::new("c0ffee0123456789abcdef").expect("an identifier"),
        symbol: InlineStr::new("BTC-USD").expect("a symbol"),
        side: Side::Buy,
        order_type,
        price: Some(59_000 * UNITS_PER_WHOLE + 25_000_000),
        qty: UNITS_PER_WHOLE / 2,
        filled_qty: UNITS_PER_WHOLE / 10,
        status: OrderStatus::PartiallyFilled,
        tif: TimeInForce::Gtc,
        created_ts: 1_765_000_000_123_456_789,
        updated_ts: 1_765_000_000_123_999_001,
        fill_notional: 0,
        details,
    }
}

/// Nanoseconds per answer for `write`, over [`ANSWERS`] answers.
fn time(mut write: impl FnMut() -> usize) -> f64 {
    let start = Instant::now();
    let mut bytes = 0;
    for _ in 0..ANSWERS {
        bytes += write();
    }
    black_box(bytes);
    start.elapsed().as_nanos() as f64 / f64::from(ANSWERS)
}

fn through_value(answer: &Answer<'_>) -> usize {
    let value = serde_json::to_value(answer).unwrap_or_default();
    let mut out = Vec::with_capacity(128);
    let _ = serde_json::to_writer(&mut out, &value);
    black_box(out).len()
}

fn by_hand(answer: &Answer<'_>) -> usize {
    black_box(JsonText::answer(answer).0).len()
}

fn compare(name: &str, answer: &Answer<'_>) {
    assert_eq!(
        JsonText::answer(answer).0.len(),
        through_value(answer),
        "the two writers disagree"
    );
    let (mut serde, mut hand) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            serde.push(time(|| through_value(black_box(answer))));
            hand.push(time(|| by_hand(black_box(answer))));
        } else {
            hand.push(time(|| by_hand(black_box(answer))));
            serde.push(time(|| through_value(black_box(answer))));
        }
    }
    let range = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        format!(
            "{:.0}-{:.0} (median {:.0})",
            v[0],
            v[v.len() - 1],
            v[v.len() / 2]
        )
    };
    println!(
        "{name}: serde_json {} ns, by hand {} ns per answer ({} bytes)",
        range(&mut serde),
        range(&mut hand),
        through_value(answer)
    );
}

fn main() {
    let filled = record(OrderType::Limit, None);
    let fill = FillView {
        trade_id: 987_654,
        order_id: filled.order_id,
        symbol: "BTC-USD",
        side: "buy",
        price: Units(59_000 * UNITS_PER_WHOLE),
        qty: Units(UNITS_PER_WHOLE / 10),
        fee: SignedUnits(1_180_000),
        liquidity: "taker",
        ts: filled.updated_ts,
    };
    compare(
        "place, one fill",
        &Answer::Order(OrderView::new(&filled, Some(vec![fill]))),
    );
    let stop = record(
        OrderType::StopLimit,
        Some(Box::new(OrderDetails {
            stop_price: Some(58_500 * UNITS_PER_WHOLE),
            expire_ts: Some(1_765_086_400_000_000_000),
            ..OrderDetails::default()
        })),
    );
    compare(
        "read, stop-limit",
        &Answer::Order(OrderView::new(&stop, None)),
    );
}
