//! Rule changes after listing and delisting: which resting orders survive,
//! that survivors keep their priority and exact reservations, and that
//! the state round-trips through a snapshot.

use exchange_core::{Engine, OrderView};
use exchange_testkit::engine::*;
use exchange_types::*;
use proptest::prelude::*;

fn set(h: &mut Harness, set: SetInstrumentRules) -> Vec<Event> {
    let events = h.run_checked(set_rules(set));
    assert_eq!(reject_reason(&events), None, "{events:?}");
    events
}

fn published(events: &[Event]) -> Option<&InstrumentRules> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::InstrumentRules(r) => Some(r.as_ref()),
        _ => None,
    })
}

fn assert_round_trips(h: &Harness) {
    let restored = Engine::restore(&h.engine.snapshot()).expect("restores");
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    assert_eq!(restored.instruments(), h.engine.instruments());
}

#[test]
fn a_listing_publishes_its_rules() {
    let mut h = Harness::new();
    let events = h.run(add(AddInstrument {
        min_notional: Some(dec("10")),
        min_qty: Some(dec("0.001")),
        max_qty: Some(dec("50")),
        ..btc_usd()
    }));
    assert_eq!(names(&events), ["instrument_added", "instrument_rules"]);
    let r = published(&events).expect("rules");
    assert_eq!(
        (
            r.tick_size,
            r.lot_size,
            r.min_qty,
            r.max_qty,
            r.min_notional
        ),
        (
            units("0.01"),
            units("0.0001"),
            units("0.001"),
            units("50"),
            units("10")
        )
    );
    assert_eq!((r.maker_fee_bps, r.taker_fee_bps, r.collar_bps), (-1, 5, 0));
    assert_eq!(r.status, TradingStatus::Trading);
    let view = &h.engine.instruments()[0];
    assert_eq!(view.min_notional, units("10"));
    assert_round_trips(&h);
}

#[test]
fn a_coarser_tick_cancels_the_orders_off_it_and_keeps_the_rest() {
    let mut h = Harness::funded(2);
    let on = place_ok(&mut h, limit(1, "on", Side::Buy, "100", "1"));
    let off = place_ok(&mut h, limit(1, "off", Side::Buy, "100.05", "1"));
    let ask = place_ok(&mut h, limit(2, "ask", Side::Sell, "101.1", "2"));
    let usd_before = bal(&h, 1, "USD");
    let events = set(
        &mut h,
        SetInstrumentRules {
            tick_size: Some(dec("0.1")),
            ..rules("BTC-USD")
        },
    );
    let canceled = cancels(&events);
    assert_eq!(canceled.len(), 1);
    assert_eq!(
        (canceled[0].0, canceled[0].1),
        (off, CancelReason::RulesChanged)
    );
    assert_eq!(open_ids(&h), {
        let mut ids = vec![on, ask];
        ids.sort_unstable();
        ids
    });
    // The canceled buy's funds are back; the book is unchanged in units.
    let released = units("100.05") + units("100.05") * 5 / 10_000;
    assert_eq!(bal(&h, 1, "USD").1, usd_before.1 + released);
    assert_eq!(
        book(&h).bids,
        [(units("100"), units("1"))],
        "the surviving level keeps its price"
    );
    assert_eq!(published(&events).expect("rules").tick_size, units("0.1"));
    assert_rejected(
        &mut h,
        cmd(limit(1, "x", Side::Buy, "100.05", "1")),
        RejectReason::PriceNotOnTick,
    );
    // A new order on the new tick trades with the survivor at its price.
    let t = exec(&mut h, limit(2, "t", Side::Sell, "100", "0.4"));
    assert_eq!(
        trades(&t),
        [(units("100"), units("0.4"), on, order_id(&t).expect("id"))]
    );
    assert_round_trips(&h);
}

#[test]
fn a_coarser_lot_keeps_time_priority_of_the_orders_that_fit() {
    let mut h = Harness::funded(3);
    let first = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let odd = place_ok(&mut h, limit(2, "b", Side::Sell, "100", "0.0003"));
    let second = place_ok(&mut h, limit(2, "c", Side::Sell, "100", "0.5"));
    let events = set(
        &mut h,
        SetInstrumentRules {
            lot_size: Some(dec("0.001")),
            min_qty: Some(dec("0.001")),
            ..rules("BTC-USD")
        },
    );
    assert_eq!(
        cancels(&events)
            .iter()
            .map(|c| (c.0, c.1))
            .collect::<Vec<_>>(),
        [(odd, CancelReason::RulesChanged)]
    );
    assert_eq!(book(&h).asks, [(units("100"), units("1.5"))]);
    let t = exec(&mut h, limit(3, "t", Side::Buy, "100", "1.2"));
    let makers: Vec<OrderId> = trades(&t).iter().map(|t| t.2).collect();
    assert_eq!(makers, [first, second], "first in, first filled");
    assert_round_trips(&h);
}

#[test]
fn bounds_and_minimum_notional_cancel_what_no_longer_fits() {
    let mut h = Harness::funded(2);
    let small = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "0.05"));
    let big = place_ok(&mut h, limit(1, "b", Side::Sell, "100", "60"));
    let fine = place_ok(&mut h, limit(1, "f", Side::Sell, "100", "1"));
    let events = set(
        &mut h,
        SetInstrumentRules {
            min_notional: Some(dec("10")),
            max_qty: Some(dec("50")),
            ..rules("BTC-USD")
        },
    );
    let mut gone: Vec<OrderId> = cancels(&events).iter().map(|c| c.0).collect();
    gone.sort_unstable();
    assert_eq!(gone, [small, big]);
    assert_eq!(open_ids(&h), [fine]);
    // Zero removes the minimum again.
    set(
        &mut h,
        SetInstrumentRules {
            min_notional: Some(dec("0")),
            ..rules("BTC-USD")
        },
    );
    place_ok(&mut h, limit(1, "s2", Side::Sell, "100", "0.05"));
    assert_round_trips(&h);
}

#[test]
fn a_fee_change_moves_resting_buys_reservations_or_cancels_them() {
    let mut h = Harness::funded(0);
    h.run(deposit(1, "USD", "1000"));
    h.run(deposit(2, "USD", "1000000"));
    // Account 1 commits nearly everything: 999 + 0.05% fee = 999.4995.
    let tight = place_ok(&mut h, limit(1, "t", Side::Buy, "999", "1"));
    let roomy = place_ok(&mut h, limit(2, "r", Side::Buy, "999", "1"));
    let events = set(
        &mut h,
        SetInstrumentRules {
            taker_fee_bps: Some(100),
            ..rules("BTC-USD")
        },
    );
    // 1% of 999 is 9.99 more than account 1 has left.
    assert_eq!(
        cancels(&events)
            .iter()
            .map(|c| (c.0, c.1))
            .collect::<Vec<_>>(),
        [(tight, CancelReason::RulesChanged)]
    );
    assert_eq!(bal(&h, 1, "USD"), (units("1000"), units("1000")));
    assert_eq!(open_ids(&h), [roomy]);
    let held = units("999") + units("9.99");
    assert_eq!(
        bal(&h, 2, "USD"),
        (units("1000000"), units("1000000") - held)
    );
    // Lower again: the difference goes back.
    set(
        &mut h,
        SetInstrumentRules {
            taker_fee_bps: Some(0),
            maker_fee_bps: Some(0),
            ..rules("BTC-USD")
        },
    );
    assert_eq!(
        bal(&h, 2, "USD"),
        (units("1000000"), units("1000000") - units("999"))
    );
    assert_round_trips(&h);
}

#[test]
fn delisting_cancels_everything_and_keeps_the_listing() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let b = place_ok(&mut h, limit(2, "b", Side::Buy, "99", "1"));
    let events = h.run_checked(Command::Delist {
        symbol: sym("BTC-USD"),
    });
    let mut gone: Vec<(OrderId, CancelReason)> =
        cancels(&events).iter().map(|c| (c.0, c.1)).collect();
    gone.sort_unstable_by_key(|g| g.0);
    assert_eq!(
        gone,
        [(a, CancelReason::Delisted), (b, CancelReason::Delisted)]
    );
    assert_eq!(
        published(&events).expect("rules").status,
        TradingStatus::Delisted
    );
    assert!(open_ids(&h).is_empty());
    assert_eq!(bal(&h, 1, "BTC"), (units("100"), units("100")));
    assert_eq!(bal(&h, 2, "USD"), (units("1000000"), units("1000000")));
    assert_eq!(h.engine.instruments()[0].status, TradingStatus::Delisted);
    assert_round_trips(&h);
}

#[test]
fn band_rules_take_effect_and_are_published() {
    let mut h = Harness::funded(0);
    let events = h.run_checked(Command::SetInstrumentRules(Box::new(SetInstrumentRules {
        static_band_bps: Some(500),
        dynamic_band_bps: Some(200),
        volatility_auction_ns: Some(60_000_000_000),
        ..rules("BTC-USD")
    })));
    let published = published(&events).expect("rules");
    assert_eq!(
        (
            published.static_band_bps,
            published.dynamic_band_bps,
            published.volatility_auction_ns
        ),
        (500, 200, 60_000_000_000)
    );
    let view = &h.engine.instruments()[0];
    assert_eq!(
        (
            view.static_band_bps,
            view.dynamic_band_bps,
            view.volatility_auction_ns
        ),
        (500, 200, 60_000_000_000)
    );
    assert_round_trips(&h);
}

const TICKS: [&str; 4] = ["0.01", "0.05", "0.1", "1"];
const LOTS: [&str; 3] = ["0.0001", "0.001", "0.01"];

proptest! {
    #![proptest_config(proptest_config(64))]

    /// Any book, any new tick, lot, fees and minimum: the engine stays
    /// consistent (the audit checks levels, indexes and that every order
    /// holds exactly what it needs), each order either survives on the
    /// new grid at its old unit price and quantity or is canceled for the
    /// rule change, and the state round-trips.
    #[test]
    fn rule_changes_keep_books_and_reservations_exact(
        orders in prop::collection::vec((any::<bool>(), 9_000u64..11_000, 1u64..3_000), 1..40),
        tick in 0usize..TICKS.len(),
        lot in 0usize..LOTS.len(),
        // At least the listing's maker rebate, which the taker fee pays.
        fee in 1i32..200,
        min_notional in 0u64..200,
        buy_after in any::<bool>(),
    ) {
        let mut h = Harness::funded(4);
        for (n, (buy, cents, lots)) in orders.iter().enumerate() {
            let side = if *buy { Side::Buy } else { Side::Sell };
            let price = format!("{}.{:02}", cents / 100, cents % 100);
            let qty = format!("0.{lots:04}");
            h.run_checked(cmd(limit(1 + (n as u64 % 4), &format!("o{n}"), side, &price, &qty)));
        }
        let before: Vec<OrderView> = open_ids(&h)
            .into_iter()
            .filter_map(|id| open_order(&h, id))
            .collect();
        let events = h.run_checked(Command::SetInstrumentRules(Box::new(SetInstrumentRules {
            tick_size: Some(dec(TICKS[tick])),
            lot_size: Some(dec(LOTS[lot])),
            min_qty: Some(dec(LOTS[lot])),
            taker_fee_bps: Some(fee),
            min_notional: Some(Dec::from_units(min_notional * 100_000_000)),
            ..rules("BTC-USD")
        })));
        prop_assert_eq!(reject_reason(&events), None);
        let canceled: Vec<OrderId> = cancels(&events).iter().map(|c| c.0).collect();
        prop_assert!(cancels(&events).iter().all(|c| c.1 == CancelReason::RulesChanged));
        let tick_units = units(TICKS[tick]);
        let lot_units = units(LOTS[lot]);
        for old in &before {
            match open_order(&h, old.order_id) {
                Some(now) => {
                    prop_assert!(!canceled.contains(&old.order_id));
                    prop_assert_eq!(
                        (now.price, now.qty, now.filled_qty),
                        (old.price, old.qty, old.filled_qty)
                    );
                    prop_assert_eq!(now.price % tick_units, 0);
                    prop_assert_eq!(now.qty % lot_units, 0);
                }
                None => prop_assert!(canceled.contains(&old.order_id)),
            }
        }
        let restored = Engine::restore(&h.engine.snapshot()).expect("restores");
        prop_assert_eq!(restored.state_hash(), h.engine.state_hash());
        // Trading goes on against the regridded book.
        let side = if buy_after { Side::Buy } else { Side::Sell };
        let price = if buy_after { "200" } else { "50" };
        h.run_checked(cmd(limit(4, "after", side, price, LOTS[lot])));
    }
}
