//! What writing a REST answer costs, `serde_json` (the answer made a
//! `Value`, then written, as axum's `Json` wrote it) against the writer by
//! hand: `cargo run --release -p exchange-gateway --example rest_answer`.
//!
//! The answers: a limit order that took one fill (a place's answer), a
//! resting stop-limit with its details and no fills (a read of one
//! order), a refused order's body, an account's balances, a page of
//! fills and one of candles. Rounds alternate which writer goes first, so a slow moment of a
//! shared machine falls on both. Figures go to BENCHMARKS.md.

#![allow(
    clippy::disallowed_types,
    clippy::disallowed_methods,
    reason = "a timing harness: the clock never reaches the engine"
)]

use std::hint::black_box;
use std::time::Instant;

use exchange_core::BalanceView;
use exchange_gateway::error::ApiError;
use exchange_gateway::rest_text::JsonText;
use exchange_gateway::translate::Answer;
use exchange_gateway::wire::{FillView, OrderView, SignedUnits, Units};
use exchange_marketdata::{json as market_json, Candle};
use exchange_node::history::{Fill, OrderDetails, OrderRecord, OrderStatus};
use exchange_types::ids::InlineStr;
use exchange_types::{format_units, OrderType, RejectReason, Side, TimeInForce, UNITS_PER_WHOLE};
use serde_json::json;

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

/// The bytes an answer had through a `serde_json::Value`, as axum's
/// `Json` wrote them.
fn through_value(value: &impl serde::Serialize) -> Vec<u8> {
    let value = serde_json::to_value(value).unwrap_or_default();
    let mut out = Vec::with_capacity(128);
    let _ = serde_json::to_writer(&mut out, &value);
    out
}

/// Times the two writers of one answer, rounds alternating which goes
/// first, and prints the range and median of each.
fn compare(name: &str, serde: impl Fn() -> Vec<u8>, hand: impl Fn() -> Vec<u8>) {
    assert_eq!(
        String::from_utf8_lossy(&serde()),
        String::from_utf8_lossy(&hand()),
        "the two writers disagree"
    );
    let serde_len = || black_box(serde()).len();
    let hand_len = || black_box(hand()).len();
    let (mut by_serde, mut by_hand) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            by_serde.push(time(serde_len));
            by_hand.push(time(hand_len));
        } else {
            by_hand.push(time(hand_len));
            by_serde.push(time(serde_len));
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
        range(&mut by_serde),
        range(&mut by_hand),
        hand().len()
    );
}

fn order_answers() {
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
    let placed = Answer::Order(OrderView::new(&filled, Some(vec![fill])));
    compare(
        "place, one fill",
        || through_value(black_box(&placed)),
        || JsonText::answer(black_box(&placed)).0,
    );
    let stop = record(
        OrderType::StopLimit,
        Some(Box::new(OrderDetails {
            stop_price: Some(58_500 * UNITS_PER_WHOLE),
            expire_ts: Some(1_765_086_400_000_000_000),
            ..OrderDetails::default()
        })),
    );
    let read = Answer::Order(OrderView::new(&stop, None));
    compare(
        "read, stop-limit",
        || through_value(black_box(&read)),
        || JsonText::answer(black_box(&read)).0,
    );
}

/// A refused order's body, as the handlers built it with `json!`.
fn refusal() {
    let error = ApiError::reject(RejectReason::InsufficientFunds);
    compare(
        "refusal",
        || through_value(&json!({ "code": black_box(&error).code, "message": error.message })),
        || JsonText::error(black_box(&error).code, &error.message).0,
    );
}

fn balances() {
    let balances: Vec<BalanceView> = [("BTC", 3), ("ETH", 40), ("USD", 250_000)]
        .into_iter()
        .map(|(asset, wholes)| BalanceView {
            account: 42,
            asset: InlineStr::new(asset).expect("an asset"),
            total: wholes * UNITS_PER_WHOLE + 12_345,
            available: wholes * UNITS_PER_WHOLE / 2,
        })
        .collect();
    let serde = || {
        let values: Vec<serde_json::Value> = black_box(&balances)
            .iter()
            .map(|b| {
                json!({ "asset": b.asset.as_str(), "total": format_units(b.total),
                    "available": format_units(b.available) })
            })
            .collect();
        through_value(&json!({ "account_id": 42, "balances": values }))
    };
    compare("balances, three assets", serde, || {
        JsonText::balances(42, black_box(&balances)).0
    });
}

/// A page of ten fills, each a `Value` first as the handler made them.
fn fills() {
    let fills: Vec<Fill> = (0..10)
        .map(|i| Fill {
            trade_id: 987_654 + i,
            order_id: 1_234_567,
            symbol: "BTC-USD".to_owned(),
            side: "buy".to_owned(),
            price: 59_000 * UNITS_PER_WHOLE + i * 25_000_000,
            qty: UNITS_PER_WHOLE / 10,
            fee: 1_180_000,
            liquidity: "maker".to_owned(),
            ts: 1_765_000_000_123_456_789 + i,
        })
        .collect();
    let serde = || {
        let values: Vec<serde_json::Value> = black_box(&fills)
            .iter()
            .map(|fill| serde_json::to_value(FillView::from(fill)).unwrap_or_default())
            .collect();
        through_value(&json!({ "fills": values }))
    };
    let hand = || {
        let views: Vec<FillView<'_>> = black_box(&fills).iter().map(FillView::from).collect();
        JsonText::fills(&views).0
    };
    compare("fills, ten", serde, hand);
}

/// A page of ten one-minute candles.
fn candles() {
    let candles: Vec<Candle> = (0..10u64)
        .map(|i| Candle {
            start: 1_765_000_000_000_000_000 + i * 60_000_000_000,
            open: 59_000 * UNITS_PER_WHOLE + i * 1_000_000,
            high: 59_010 * UNITS_PER_WHOLE,
            low: 58_990 * UNITS_PER_WHOLE + i,
            close: 59_005 * UNITS_PER_WHOLE,
            volume: u128::from(12 * UNITS_PER_WHOLE + i * 3_300_000),
            trades: 40 + i,
        })
        .collect();
    let serde = || {
        let values: Vec<serde_json::Value> = black_box(&candles)
            .iter()
            .map(market_json::candle_value)
            .collect();
        through_value(&json!({ "symbol": "BTC-USD", "interval": "1m", "candles": values }))
    };
    compare("candles, ten", serde, || {
        JsonText::candles("BTC-USD", "1m", black_box(&candles)).0
    });
}

fn main() {
    order_answers();
    refusal();
    balances();
    fills();
    candles();
}
