//! Midpoint orders against the model: hand-written streams for the rules
//! of docs/market-model.md ("Midpoint orders"), and a check that the random
//! streams make midpoint orders trade at all.

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

use super::{apply_at, compare, model_events, setup, stop_place};
use crate::model::Ev;

fn trades(events: &[Ev]) -> Vec<(OrderId, OrderId, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match e {
            Ev::Trade {
                maker_order_id,
                taker_order_id,
                price,
                qty,
                ..
            } => Some((*maker_order_id, *taker_order_id, *price, *qty)),
            _ => None,
        })
        .collect()
}

/// An odd spread, a limit short of the midpoint, a minimum a contra order
/// is too small for, unlimited orders first, and a replace that moves the
/// limit.
#[test]
fn midpoint_orders_agree_with_the_model() {
    let mut commands = setup();
    commands.extend([
        deposit(3, "USD", "1000000"),
        deposit(3, "BTC", "100"),
        // Ids 1, 2: a spread of three ticks, no midpoint.
        cmd(limit(3, "bid", Side::Buy, "99.98", "0.0001")),
        cmd(limit(3, "ask", Side::Sell, "100.01", "0.0001")),
        // Id 3: a sell limited at 100.01, id 4 an unlimited one with a
        // minimum of 2 lots, id 5 a buy of 1 lot limited at 99.99.
        cmd(midpoint(1, "s1", Side::Sell, Some("100.01"), "0.0002")),
        cmd(with_min_qty(
            midpoint(1, "s2", Side::Sell, None, "0.0003"),
            "0.0002",
        )),
        cmd(midpoint(2, "b1", Side::Buy, Some("99.99"), "0.0001")),
        // Id 6: the spread is now 99.98 - 100.02, midpoint 100: out of
        // b1's reach, and s1's.
        cmd(limit(3, "ask2", Side::Sell, "100.02", "0.0001")),
        Command::Cancel(Cancel {
            account: 3,
            order: OrderRef::Client(coid("ask")),
        }),
        // b1 reaches 100: s2 goes first but wants 2 lots; s1 is above it.
        replace(2, "b1", Some("100"), None),
        // s1 comes down to 100: b1 trades with it, as the taker.
        replace(1, "s1", Some("100"), None),
        // Id 7: two lots meet s2's minimum.
        cmd(ioc(midpoint(2, "b2", Side::Buy, None, "0.0002"))),
    ]);
    compare(&commands).unwrap();
    let events = model_events(&commands);
    let n = events.len();
    assert!(trades(&events[n - 3]).is_empty(), "{:?}", events[n - 3]);
    assert_eq!(trades(&events[n - 2]), [(5, 3, 10_000_000_000, 10_000)]);
    assert_eq!(trades(&events[n - 1]), [(4, 7, 10_000_000_000, 20_000)]);
}

/// Per docs/market-model.md (midpoint orders), no order may name a
/// midpoint order as its one-cancels-other partner: a midpoint order
/// trades when the lit quotes move, after the command's pairs are
/// settled. The stop is refused, and the midpoint order then trades alone.
#[test]
fn a_stop_may_not_pair_with_a_midpoint_order() {
    let mut commands = setup();
    commands.extend([
        cmd(limit(1, "bid", Side::Buy, "99.98", "0.0001")),
        // Id 2.
        cmd(midpoint(2, "mb", Side::Buy, Some("100"), "0.0001")),
        stop_place(
            limit(2, "sl", Side::Sell, "99", "0.0001"),
            OrderType::StopLimit,
            "99",
            Some("mb"),
        ),
        // Id 3: nothing to trade at, no offer yet.
        cmd(midpoint(1, "ms", Side::Sell, None, "0.0001")),
        // The offer makes the midpoint 100: mb trades.
        cmd(limit(1, "ask", Side::Sell, "100.02", "0.0001")),
    ]);
    let events = model_events(&commands);
    let n = events.len();
    assert_eq!(
        events[n - 3],
        [Ev::Rejected("place", RejectReason::MidpointNotAllowed)]
    );
    assert_eq!(trades(&events[n - 1]), [(2, 3, 10_000_000_000, 10_000)]);
    compare(&commands).unwrap();
}

/// The random streams are worth comparing on midpoint orders only if they
/// trade: count the engine's midpoint trades over fixed streams.
#[test]
fn random_streams_trade_midpoint_orders() {
    let mut runner = TestRunner::deterministic();
    let (mut midpoint_trades, mut streams) = (0, 0);
    while streams < 16 {
        let commands = command_stream_with_midpoint(Profile::Generous)
            .new_tree(&mut runner)
            .expect("the stream strategy draws")
            .current();
        let mut engine = Engine::new();
        for (index, command) in commands.iter().enumerate() {
            let events = apply_at(&mut engine, index, command);
            midpoint_trades += events
                .iter()
                .filter(|e| matches!(&e.kind, EventKind::Trade(t) if t.midpoint))
                .count();
        }
        streams += 1;
    }
    println!("{midpoint_trades} midpoint trades in {streams} streams");
    assert!(midpoint_trades >= streams, "{midpoint_trades}");
}

/// Resting midpoint orders stay through a halt, inactive, and match again
/// once trading resumes: a quote that moves during the halt (a cancel is
/// taken then) trades nothing until the resume.
#[test]
fn midpoint_orders_wait_through_a_halt() {
    let mut commands = setup();
    commands.extend([
        cmd(limit(1, "bid", Side::Buy, "99.98", "0.0001")),
        cmd(limit(1, "ask", Side::Sell, "100.01", "0.0001")),
        cmd(limit(1, "ask2", Side::Sell, "100.02", "0.0001")),
        cmd(midpoint(1, "mb", Side::Buy, Some("100"), "0.0001")),
        cmd(midpoint(2, "ms", Side::Sell, Some("100"), "0.0001")),
        Command::Halt {
            symbol: sym("BTC-USD"),
        },
        // The offer moves to 100.02: the midpoint is 100.
        Command::Cancel(Cancel {
            account: 1,
            order: OrderRef::Client(coid("ask")),
        }),
        Command::Resume {
            symbol: sym("BTC-USD"),
        },
    ]);
    let events = model_events(&commands);
    let n = events.len();
    assert!(trades(&events[n - 2]).is_empty(), "{:?}", events[n - 2]);
    assert_eq!(trades(&events[n - 1]), [(4, 5, 10_000_000_000, 10_000)]);
    compare(&commands).unwrap();
}
