//! Icebergs: only the shown slice is on the book, a refill goes to the back
//! of its level, and hidden quantity trades after every shown lot at its
//! price, in the icebergs' time priority.

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;

fn accepted_ext(events: &[Event]) -> Option<event::AcceptedExt> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Accepted(a) => a.ext.as_deref().cloned(),
        _ => None,
    })
}

#[test]
fn only_the_shown_slice_is_on_the_book() {
    let mut h = Harness::funded(2);
    let events = exec(&mut h, iceberg(limit(1, "a", Side::Sell, "100", "5"), "1"));
    assert_eq!(
        book_updates(&events),
        [(Side::Sell, units("100"), units("1"))]
    );
    assert_eq!(
        accepted_ext(&events).and_then(|x| x.display_qty),
        Some(units("1"))
    );
    assert_eq!(book(&h).asks, [(units("100"), units("1"))]);
    // The whole order is reserved and open, hidden part included.
    assert_eq!(bal(&h, 1, "BTC"), (units("100"), units("95")));
    let id = order_id(&events).unwrap();
    assert_eq!(open_order(&h, id).map(|o| o.qty), Some(units("5")));
}

#[test]
fn a_refilled_slice_loses_time_priority() {
    let mut h = Harness::funded(3);
    let a = place_ok(&mut h, iceberg(limit(1, "a", Side::Sell, "100", "5"), "1"));
    let b = place_ok(&mut h, limit(2, "b", Side::Sell, "100", "1"));
    let first = exec(&mut h, limit(3, "t1", Side::Buy, "100", "1"));
    assert_eq!(
        trades(&first),
        [(units("100"), units("1"), a, order_id(&first).unwrap())]
    );
    // A new slice of 1 is shown: the level still shows 2, with b first.
    assert_eq!(book(&h).asks, [(units("100"), units("2"))]);
    let second = exec(&mut h, limit(3, "t2", Side::Buy, "100", "1"));
    assert_eq!(trades(&second)[0].2, b);
    let third = exec(&mut h, limit(3, "t3", Side::Buy, "100", "0.5"));
    assert_eq!(trades(&third)[0].2, a);
}

#[test]
fn hidden_quantity_trades_after_all_shown_quantity_in_iceberg_priority() {
    let mut h = Harness::funded(4);
    let a = place_ok(&mut h, iceberg(limit(1, "a", Side::Sell, "100", "5"), "1"));
    let b = place_ok(&mut h, limit(2, "b", Side::Sell, "100", "1"));
    let c = place_ok(&mut h, iceberg(limit(3, "c", Side::Sell, "100", "3"), "1"));
    let better_level = place_ok(&mut h, limit(2, "d", Side::Sell, "101", "1"));
    let events = exec(&mut h, limit(4, "t", Side::Buy, "101", "8"));
    let t = order_id(&events).unwrap();
    let fills: Vec<(u64, OrderId)> = trades(&events).iter().map(|x| (x.1, x.2)).collect();
    // Shown: a 1, b 1, c 1; then hidden: all of a's 4, then 1 of c's 2.
    assert_eq!(
        fills,
        [
            (units("1"), a),
            (units("1"), b),
            (units("1"), c),
            (units("4"), a),
            (units("1"), c)
        ]
    );
    assert!(trades(&events)
        .iter()
        .all(|x| x.0 == units("100") && x.3 == t));
    assert!(open_order(&h, better_level).is_some());
    assert_eq!(book(&h).asks[0], (units("100"), units("1")));
    let c_view = open_order(&h, c).unwrap();
    assert_eq!(c_view.qty - c_view.filled_qty, units("1"));
    // The trade events carry the real leaves, hidden included.
    let last = trade_fields(&events).pop().unwrap();
    assert_eq!(last.maker_leaves_qty, units("1"));
}

#[test]
fn an_iceberg_takes_with_its_whole_quantity_then_rests_a_slice() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "m", Side::Sell, "100", "1"));
    let events = exec(&mut h, iceberg(limit(2, "i", Side::Buy, "100", "5"), "2"));
    assert_eq!(trades(&events).len(), 1);
    assert_eq!(book(&h).bids, [(units("100"), units("2"))]);
    // A sell of 3.5 takes the slice of 2 and then 1.5 hidden.
    let sell = exec(&mut h, limit(1, "s", Side::Sell, "100", "3.5"));
    let qtys: Vec<u64> = trades(&sell).iter().map(|t| t.1).collect();
    assert_eq!(qtys, [units("2"), units("1.5")]);
    assert_eq!(book(&h).bids, [(units("100"), units("0.5"))]);
}

#[test]
fn fill_or_kill_counts_hidden_quantity() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, iceberg(limit(1, "a", Side::Sell, "100", "5"), "1"));
    let events = exec(&mut h, fok(limit(2, "f", Side::Buy, "100", "4")));
    let filled: u64 = trades(&events).iter().map(|t| t.1).sum();
    assert_eq!(filled, units("4"));
    assert_eq!(book(&h).asks, [(units("100"), units("1"))]);
    let too_much = exec(&mut h, fok(limit(2, "g", Side::Buy, "100", "1.5")));
    assert!(trades(&too_much).is_empty());
}

#[test]
fn lowering_an_icebergs_quantity_takes_hidden_lots_first_and_keeps_priority() {
    let mut h = Harness::funded(3);
    let a = place_ok(&mut h, iceberg(limit(1, "a", Side::Sell, "100", "5"), "1"));
    place_ok(&mut h, limit(2, "b", Side::Sell, "100", "1"));
    let events = h.run_checked(replace(1, "a", None, Some("2")));
    // Nothing shown changed: no book event.
    assert!(book_updates(&events).is_empty());
    assert_eq!(book(&h).asks, [(units("100"), units("2"))]);
    assert_eq!(bal(&h, 1, "BTC"), (units("100"), units("98")));
    let probe = exec(&mut h, limit(3, "p", Side::Buy, "100", "0.5"));
    assert_eq!(trades(&probe)[0].2, a);
    // Below the slice: the shown lots shrink too.
    let events = h.run_checked(replace(1, "a", None, Some("0.75")));
    assert_eq!(
        book_updates(&events),
        [(Side::Sell, units("100"), units("1.25"))]
    );
}

#[test]
fn raising_an_icebergs_quantity_moves_it_back_with_a_new_slice() {
    let mut h = Harness::funded(3);
    let a = place_ok(&mut h, iceberg(limit(1, "a", Side::Sell, "100", "5"), "1"));
    let b = place_ok(&mut h, limit(2, "b", Side::Sell, "100", "1"));
    let events = h.run_checked(replace(1, "a", None, Some("6")));
    assert_eq!(
        book_updates(&events),
        [
            (Side::Sell, units("100"), units("1")),
            (Side::Sell, units("100"), units("2"))
        ]
    );
    let probe = exec(&mut h, limit(3, "p", Side::Buy, "100", "0.5"));
    assert_eq!(trades(&probe)[0].2, b);
    assert_eq!(open_order(&h, a).map(|o| o.qty), Some(units("6")));
}

#[test]
fn canceling_an_iceberg_releases_everything_and_clears_the_level() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, iceberg(limit(1, "a", Side::Sell, "100", "5"), "1"));
    let events = h.run_checked(cancel_client(1, "a"));
    assert_eq!(book_updates(&events), [(Side::Sell, units("100"), 0)]);
    assert_eq!(cancels(&events)[0].2, units("5"));
    assert_eq!(bal(&h, 1, "BTC"), (units("100"), units("100")));
    assert!(book(&h).asks.is_empty());
}

#[test]
fn post_only_icebergs_are_allowed() {
    let mut h = Harness::funded(1);
    let events = exec(
        &mut h,
        post_only(iceberg(limit(1, "a", Side::Buy, "100", "5"), "1")),
    );
    assert_eq!(reject_reason(&events), None);
    assert_eq!(book(&h).bids, [(units("100"), units("1"))]);
}

#[test]
fn self_trade_decrement_takes_an_icebergs_hidden_lots_first() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, iceberg(limit(1, "a", Side::Sell, "100", "5"), "1"));
    let taker = with_stp(
        limit(1, "t", Side::Buy, "100", "2"),
        SelfTradePrevention::Decrement,
    );
    let events = exec(&mut h, taker);
    assert!(trades(&events).is_empty());
    // 2 of the 4 hidden lots are gone; the slice of 1 still shows.
    assert!(book_updates(&events)
        .iter()
        .all(|&(side, _, qty)| side == Side::Sell && qty == units("1")));
    assert_eq!(book(&h).asks, [(units("100"), units("1"))]);
}

/// A snapshot taken while icebergs are partly shown restores to an engine
/// that continues exactly: same events, same state hash.
#[test]
fn snapshot_and_restore_continue_exactly_with_partly_shown_icebergs() {
    let mut h = Harness::funded(4);
    place_ok(&mut h, iceberg(limit(1, "a", Side::Sell, "100", "5"), "1"));
    place_ok(&mut h, limit(2, "b", Side::Sell, "100", "1"));
    place_ok(
        &mut h,
        iceberg(limit(3, "c", Side::Sell, "100", "3"), "1.5"),
    );
    place_ok(&mut h, iceberg(limit(3, "d", Side::Buy, "99", "3"), "0.5"));
    exec(&mut h, limit(4, "t", Side::Buy, "100", "1.7"));
    let bytes = h.engine.snapshot();
    let mut restored = Harness {
        engine: Engine::restore(&bytes).expect("restores"),
        ts: h.ts,
    };
    assert_eq!(restored.engine.state_hash(), h.engine.state_hash());
    let more = [
        cmd(limit(4, "u", Side::Buy, "100", "6")),
        cmd(limit(2, "v", Side::Sell, "99", "1")),
        replace(3, "d", None, Some("2")),
        cmd(limit(4, "w", Side::Buy, "100", "1")),
    ];
    for command in more {
        let a = h.run_checked(command.clone());
        let b = restored.run_checked(command);
        assert_eq!(a, b);
    }
    assert_eq!(restored.engine.state_hash(), h.engine.state_hash());
    // The hidden split is part of the state: it changes the hash.
    let mut plain = Harness::funded(1);
    let mut berg = Harness::funded(1);
    place_ok(&mut plain, limit(1, "a", Side::Sell, "100", "5"));
    place_ok(
        &mut berg,
        iceberg(limit(1, "a", Side::Sell, "100", "5"), "1"),
    );
    assert_ne!(plain.engine.state_hash(), berg.engine.state_hash());
}

/// In an uncross a resting iceberg gives hidden lots first: its slice does
/// not trade, so it is not replenished and keeps its place.
#[test]
fn an_uncross_takes_a_resting_icebergs_hidden_lots_before_its_slice() {
    let mut h = Harness::funded(3);
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    let a = place_ok(&mut h, iceberg(limit(1, "a", Side::Buy, "100", "1"), "0.3"));
    let c = place_ok(&mut h, limit(3, "c", Side::Buy, "100", "0.2"));
    place_ok(&mut h, limit(2, "s", Side::Sell, "100", "0.5"));
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    let fills: Vec<(u64, OrderId)> = trades(&events).iter().map(|t| (t.1, t.2)).collect();
    assert_eq!(fills, [(units("0.5"), a)]);
    let split = h.engine.iceberg(a).map(|v| (v.shown_qty, v.hidden_qty));
    assert_eq!(split, Some((units("0.3"), units("0.2"))));
    assert_eq!(book(&h).bids, [(units("100"), units("0.5"))]);
    let probe = exec(&mut h, limit(2, "p", Side::Sell, "100", "0.1"));
    assert_eq!(trades(&probe)[0].2, a);
    assert!(open_order(&h, c).is_some());
}
