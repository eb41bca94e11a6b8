//! Mass cancel: every open order of one account, optionally on one
//! instrument, in order-id order, and nothing of anybody else's.

use exchange_testkit::engine::*;
use exchange_types::*;

use CancelReason::MassCancel;

/// BTC-USD and ETH-USD listed; accounts 1 and 2 funded in all three assets.
fn two_instruments() -> Harness {
    let mut h = Harness::funded(2);
    h.run_checked(add(eth_usd()));
    h.run_checked(deposit(1, "ETH", "10"));
    h.run_checked(deposit(2, "ETH", "10"));
    h
}

#[test]
fn cancels_every_open_order_of_the_account_in_order_id_order() {
    let mut h = two_instruments();
    let a = place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    let b = place_ok(
        &mut h,
        on("ETH-USD", limit(1, "b", Side::Sell, "2000", "2")),
    );
    let other = place_ok(&mut h, limit(2, "x", Side::Buy, "99", "1"));
    let c = place_ok(&mut h, limit(1, "c", Side::Sell, "101", "0.5"));
    let events = h.run_checked(mass_cancel(1, None));
    assert_eq!(
        cancels(&events),
        [
            (a, MassCancel, units("1"), 0, 0),
            (b, MassCancel, units("2"), 0, 0),
            (c, MassCancel, units("0.5"), 0, 0),
        ]
    );
    assert_eq!(open_ids(&h), [other]);
    for code in ["USD", "BTC", "ETH"] {
        let (total, available) = bal(&h, 1, code);
        assert_eq!(total, available, "{code} still reserved");
    }
}

#[test]
fn with_a_symbol_cancels_only_that_instruments_orders() {
    let mut h = two_instruments();
    let btc = place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    let eth = place_ok(
        &mut h,
        on("ETH-USD", limit(1, "b", Side::Sell, "2000", "2")),
    );
    let events = h.run_checked(mass_cancel(1, Some("ETH-USD")));
    assert_eq!(cancels(&events), [(eth, MassCancel, units("2"), 0, 0)]);
    assert_eq!(open_ids(&h), [btc]);
    assert_eq!(bal(&h, 1, "ETH"), (units("10"), units("10")));
}

#[test]
fn reports_the_filled_part_of_partially_filled_orders() {
    let mut h = Harness::funded(2);
    let s = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "b", Side::Buy, "100", "0.4"));
    let events = h.run_checked(mass_cancel(1, None));
    assert_eq!(
        cancels(&events),
        [(s, MassCancel, units("0.6"), units("0.4"), 0)]
    );
    assert_eq!(bal(&h, 1, "BTC"), (units("99.6"), units("99.6")));
}

#[test]
fn book_events_report_what_other_accounts_leave_at_each_level() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "b", Side::Sell, "100", "0.3"));
    place_ok(&mut h, limit(1, "c", Side::Sell, "101", "1"));
    let events = h.run_checked(mass_cancel(1, None));
    assert_eq!(
        book_updates(&events),
        [
            (Side::Sell, units("100"), units("0.3")),
            (Side::Sell, units("101"), 0)
        ]
    );
    assert_eq!(book(&h).asks, [(units("100"), units("0.3"))]);
}

#[test]
fn with_nothing_open_it_cancels_nothing_and_changes_nothing() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "b", Side::Sell, "100", "1"));
    let before = observe(&h.engine);
    let events = h.run_checked(mass_cancel(1, None));
    assert!(cancels(&events).is_empty());
    assert_eq!(reject_reason(&events), None);
    assert_same_state(&before, &observe(&h.engine));
}

#[test]
fn mass_canceled_orders_are_no_longer_open() {
    let mut h = Harness::funded(1);
    let a = place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    h.run_checked(mass_cancel(1, Some("BTC-USD")));
    assert_rejected(&mut h, cancel_client(1, "a"), RejectReason::OrderNotOpen);
    assert_rejected(&mut h, cancel_id(1, a), RejectReason::OrderNotOpen);
}

#[test]
fn works_while_the_instrument_is_halted() {
    let mut h = Harness::funded(1);
    let a = place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    h.run_checked(halt("BTC-USD"));
    let events = h.run_checked(mass_cancel(1, None));
    assert_eq!(cancels(&events), [(a, MassCancel, units("1"), 0, 0)]);
}

#[test]
fn frees_the_accounts_open_order_slots_and_client_ids() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    place_ok(&mut h, limit(1, "b", Side::Buy, "98", "1"));
    h.run_checked(mass_cancel(1, None));
    assert_eq!(h.engine.open_order_count(), 0);
    place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    assert_eq!(h.engine.open_order_count(), 1);
}

#[test]
fn unknown_symbol_is_rejected() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    assert_rejected(
        &mut h,
        mass_cancel(1, Some("XRP-USD")),
        RejectReason::UnknownInstrument,
    );
}

#[test]
fn unknown_account_is_rejected() {
    let mut h = Harness::funded(1);
    assert_rejected(&mut h, mass_cancel(42, None), RejectReason::UnknownAccount);
}

#[test]
fn every_mass_cancel_is_acknowledged_with_its_count() {
    let mut h = two_instruments();
    place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    place_ok(&mut h, limit(1, "b", Side::Buy, "98", "1"));
    let acks = |events: &[Event]| -> Vec<(u64, Option<Symbol>, u32)> {
        events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::MassCanceled(m) => Some((m.account, m.symbol, m.canceled)),
                _ => None,
            })
            .collect()
    };
    let events = h.run_checked(mass_cancel(1, Some("BTC-USD")));
    assert_eq!(acks(&events), [(1, Some(sym("BTC-USD")), 2)]);
    assert_eq!(events.last().map(|e| e.kind.name()), Some("mass_canceled"));
    let nothing = h.run_checked(mass_cancel(1, None));
    assert_eq!(acks(&nothing), [(1, None, 0)]);
    assert_eq!(nothing.len(), 1, "only the acknowledgement");
}
