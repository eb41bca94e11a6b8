//! Cancel-replace: what keeps time priority and what loses it, replaces
//! that trade, and every way a replace is refused. Priority is always
//! proven by which order a later taker hits first.

use exchange_testkit::engine::*;
use exchange_types::*;

/// A sell of account 1 ("a") ahead of a sell of account 2 ("b"), both
/// 1 BTC at 100; returns their ids.
fn two_sells_at_100(h: &mut Harness) -> (OrderId, OrderId) {
    let a = place_ok(h, limit(1, "a", Side::Sell, "100", "1"));
    let b = place_ok(h, limit(2, "b", Side::Sell, "100", "1"));
    (a, b)
}

/// The maker a buy of 0.5 by account 3 at `price` hits first.
fn first_hit(h: &mut Harness, price: &str) -> OrderId {
    let events = exec(h, limit(3, "probe", Side::Buy, price, "0.5"));
    trades(&events).first().expect("a trade").2
}

#[test]
fn lowering_qty_at_the_same_price_keeps_priority() {
    let mut h = Harness::funded(3);
    let (a, _) = two_sells_at_100(&mut h);
    let events = h.run_checked(replace(1, "a", None, Some("0.5")));
    assert_eq!(
        replaced(&events),
        Some((
            a,
            "a".into(),
            "a".into(),
            units("100"),
            units("0.5"),
            units("0.5")
        ))
    );
    assert_eq!(
        book_updates(&events),
        [(Side::Sell, units("100"), units("1.5"))]
    );
    assert_eq!(bal(&h, 1, "BTC"), (units("100"), units("99.5")));
    assert_eq!(first_hit(&mut h, "100"), a);
}

#[test]
fn raising_qty_loses_priority() {
    let mut h = Harness::funded(3);
    let (a, b) = two_sells_at_100(&mut h);
    let events = h.run_checked(replace(1, "a", None, Some("2")));
    // Out of the level, then back in at its tail.
    assert_eq!(
        book_updates(&events),
        [
            (Side::Sell, units("100"), units("1")),
            (Side::Sell, units("100"), units("3"))
        ]
    );
    assert_eq!(bal(&h, 1, "BTC"), (units("100"), units("98")));
    assert_eq!(open_order(&h, a).map(|o| o.qty), Some(units("2")));
    assert_eq!(first_hit(&mut h, "100"), b);
}

#[test]
fn changing_price_loses_priority_and_joins_the_back_of_the_new_level() {
    let mut h = Harness::funded(3);
    let a = place_ok(&mut h, limit(1, "a", Side::Sell, "101", "1"));
    let b = place_ok(&mut h, limit(2, "b", Side::Sell, "100", "1"));
    let events = h.run_checked(replace(1, "a", Some("100"), None));
    assert_eq!(
        book_updates(&events),
        [
            (Side::Sell, units("101"), 0),
            (Side::Sell, units("100"), units("2"))
        ]
    );
    let taker = exec(&mut h, limit(3, "t", Side::Buy, "100", "1.5"));
    assert_eq!(
        trades(&taker),
        [
            (units("100"), units("1"), b, 3),
            (units("100"), units("0.5"), a, 3)
        ]
    );
}

#[test]
fn changing_price_away_and_back_still_loses_priority() {
    let mut h = Harness::funded(3);
    let (a, b) = two_sells_at_100(&mut h);
    h.run_checked(replace(1, "a", Some("100.5"), Some("0.5")));
    h.run_checked(replace(1, "a", Some("100"), None));
    assert_eq!(first_hit(&mut h, "100"), b);
    assert_eq!(open_order(&h, a).map(|o| o.qty), Some(units("0.5")));
}

#[test]
fn renaming_only_keeps_priority_and_the_new_id_finds_the_order() {
    let mut h = Harness::funded(3);
    let (a, _) = two_sells_at_100(&mut h);
    let events = h.run_checked(rename(1, "a", "a2"));
    assert_eq!(
        replaced(&events),
        Some((
            a,
            "a".into(),
            "a2".into(),
            units("100"),
            units("1"),
            units("1")
        ))
    );
    assert!(book_updates(&events).is_empty());
    assert_eq!(first_hit(&mut h, "100"), a);
    assert_rejected(&mut h, cancel_client(1, "a"), RejectReason::UnknownOrder);
    let canceled = h.run_checked(cancel_client(1, "a2"));
    assert_eq!(
        cancels(&canceled),
        [(a, CancelReason::Requested, units("0.5"), units("0.5"), 0)]
    );
}

#[test]
fn renaming_to_the_id_of_a_closed_order_is_allowed() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "old", Side::Buy, "90", "1"));
    h.run_checked(cancel_client(1, "old"));
    let a = place_ok(&mut h, limit(1, "a", Side::Buy, "91", "1"));
    let events = h.run_checked(rename(1, "a", "old"));
    assert_eq!(
        replaced(&events).map(|r| (r.0, r.2)),
        Some((a, "old".into()))
    );
}

#[test]
fn crossing_replace_trades_as_the_taker() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    let b = place_ok(&mut h, limit(2, "b", Side::Sell, "100", "1"));
    let events = h.run_checked(replace(1, "a", Some("100"), None));
    let fills = trade_fields(&events);
    assert_eq!(fills.len(), 1);
    assert_eq!((fills[0].maker_order_id, fills[0].taker_order_id), (b, a));
    assert_eq!(fills[0].aggressor_side, Side::Buy);
    assert_eq!(
        (fills[0].maker_fee, fills[0].taker_fee),
        (-1_000_000, 5_000_000)
    );
    assert_eq!(book(&h), exchange_core::BookView::default());
    assert_eq!(bal(&h, 1, "USD"), (units("999899.95"), units("999899.95")));
}

#[test]
fn crossing_replace_rests_its_remainder_at_the_new_price() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Buy, "99", "2"));
    place_ok(&mut h, limit(2, "b", Side::Sell, "100", "1"));
    let events = h.run_checked(replace(1, "a", Some("100"), None));
    assert_eq!(trades(&events).len(), 1);
    assert_eq!(book(&h).bids, [(units("100"), units("1"))]);
    let order = open_order(&h, a).expect("rests");
    assert_eq!(
        (order.price, order.filled_qty, order.reserved),
        (units("100"), units("1"), units("100.05"))
    );
}

#[test]
fn crossing_replace_into_own_order_applies_the_orders_self_trade_mode() {
    let mut h = Harness::funded(1);
    let a = place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    let s = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let events = h.run_checked(replace(1, "a", Some("100"), None));
    assert_eq!(
        cancels(&events),
        [(a, CancelReason::SelfTrade, units("1"), 0, 0)]
    );
    assert_eq!(open_ids(&h), [s]);
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("1000000")));
}

#[test]
fn qty_is_the_new_total_including_what_already_filled() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "t", Side::Buy, "100", "0.4"));
    let events = h.run_checked(replace(1, "a", None, Some("0.8")));
    assert_eq!(
        replaced(&events),
        Some((
            a,
            "a".into(),
            "a".into(),
            units("100"),
            units("0.8"),
            units("0.4")
        ))
    );
    assert_eq!(book(&h).asks, [(units("100"), units("0.4"))]);
    assert_eq!(bal(&h, 1, "BTC"), (units("99.6"), units("99.2")));
}

#[test]
fn replacing_below_the_filled_qty_is_rejected() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "t", Side::Buy, "100", "0.6"));
    assert_rejected(
        &mut h,
        replace(1, "a", None, Some("0.5")),
        RejectReason::ReplaceBelowFilled,
    );
}

#[test]
fn replacing_to_exactly_the_filled_qty_closes_the_order() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "t", Side::Buy, "100", "0.6"));
    let events = h.run_checked(replace(1, "a", None, Some("0.6")));
    assert_eq!(
        replaced(&events),
        Some((a, "a".into(), "a".into(), units("100"), units("0.6"), 0))
    );
    assert_eq!(book_updates(&events), [(Side::Sell, units("100"), 0)]);
    assert!(open_ids(&h).is_empty());
    assert_eq!(bal(&h, 1, "BTC"), (units("99.4"), units("99.4")));
    assert_rejected(&mut h, cancel_client(1, "a"), RejectReason::OrderNotOpen);
    assert_rejected(&mut h, cancel_id(1, a), RejectReason::OrderNotOpen);
}

#[test]
fn replacing_to_exactly_filled_at_a_new_price_also_closes_the_order() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "t", Side::Buy, "100", "0.6"));
    let events = h.run_checked(replace(1, "a", Some("101"), Some("0.6")));
    assert_eq!(replaced(&events).map(|r| (r.0, r.5)), Some((a, 0)));
    assert!(open_ids(&h).is_empty());
    assert_eq!(book(&h), exchange_core::BookView::default());
    assert_eq!(bal(&h, 1, "BTC"), (units("99.4"), units("99.4")));
}

#[test]
fn duplicate_new_client_order_id_is_rejected() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "a", Side::Buy, "99", "1"));
    place_ok(&mut h, limit(1, "b", Side::Buy, "98", "1"));
    assert_rejected(
        &mut h,
        rename(1, "a", "b"),
        RejectReason::DuplicateClientOrderId,
    );
}

#[test]
fn post_only_replace_that_would_cross_is_rejected() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, post_only(limit(1, "a", Side::Buy, "99", "1")));
    place_ok(&mut h, limit(2, "b", Side::Sell, "100", "1"));
    assert_rejected(
        &mut h,
        replace(1, "a", Some("100"), None),
        RejectReason::PostOnlyWouldTake,
    );
    let events = h.run_checked(replace(1, "a", Some("99.99"), None));
    assert_eq!(replaced(&events).map(|r| r.3), Some(units("99.99")));
}

#[test]
fn replace_of_a_closed_order_is_order_not_open_by_id_and_by_client_id() {
    let mut h = Harness::funded(1);
    let a = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    h.run_checked(cancel_client(1, "a"));
    assert_rejected(
        &mut h,
        replace(1, "a", None, Some("0.5")),
        RejectReason::OrderNotOpen,
    );
    assert_rejected(
        &mut h,
        replace_id(1, a, None, Some("0.5")),
        RejectReason::OrderNotOpen,
    );
}

#[test]
fn replace_needing_more_than_available_is_rejected_at_the_exact_boundary() {
    let mut h = Harness::funded(0);
    h.run_checked(deposit(5, "USD", "200"));
    place_ok(&mut h, limit(5, "a", Side::Buy, "100", "1"));
    // Holds 100.05, 99.95 available; 2 BTC would need 200.1.
    assert_rejected(
        &mut h,
        replace(5, "a", None, Some("2")),
        RejectReason::InsufficientFunds,
    );
    // 199.91 + 5 bps = 200.009955 > 200; 199.90 + 5 bps = 199.99995.
    assert_rejected(
        &mut h,
        replace(5, "a", Some("199.91"), None),
        RejectReason::InsufficientFunds,
    );
    h.run_checked(replace(5, "a", Some("199.90"), None));
    assert_eq!(bal(&h, 5, "USD"), (units("200"), units("0.00005")));
}

#[test]
fn replace_moves_the_buy_reservation_both_ways() {
    let mut h = Harness::funded(1);
    let a = place_ok(&mut h, limit(1, "a", Side::Buy, "100", "1"));
    h.run_checked(replace(1, "a", None, Some("2")));
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("999799.9")));
    h.run_checked(replace(1, "a", Some("90"), None));
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("999819.91")));
    assert_eq!(open_order(&h, a).map(|o| o.reserved), Some(units("180.09")));
}

#[test]
fn replace_that_changes_nothing_is_rejected() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "a", Side::Buy, "100", "1"));
    assert_rejected(
        &mut h,
        replace(1, "a", Some("100"), Some("1")),
        RejectReason::NothingToReplace,
    );
    assert_rejected(&mut h, rename(1, "a", "a"), RejectReason::NothingToReplace);
}

#[test]
fn replace_while_halted_is_rejected() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "a", Side::Buy, "100", "1"));
    h.run_checked(halt("BTC-USD"));
    assert_rejected(
        &mut h,
        replace(1, "a", None, Some("0.5")),
        RejectReason::InstrumentHalted,
    );
}

#[test]
fn collar_applies_to_a_new_price_but_not_to_a_qty_change() {
    let mut h = funded_with(collared(1000, "100"), 1);
    place_ok(&mut h, limit(1, "a", Side::Sell, "110", "1"));
    assert_rejected(
        &mut h,
        replace(1, "a", Some("110.01"), None),
        RejectReason::PriceOutsideCollar,
    );
    h.run_checked(replace(1, "a", None, Some("0.5")));
    assert_eq!(book(&h).asks, [(units("110"), units("0.5"))]);
}

#[test]
fn replace_of_another_accounts_order_is_unknown() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Buy, "100", "1"));
    assert_rejected(
        &mut h,
        replace_id(2, a, None, Some("0.5")),
        RejectReason::UnknownOrder,
    );
    assert_rejected(
        &mut h,
        replace(2, "a", None, Some("0.5")),
        RejectReason::UnknownOrder,
    );
}

/// The event kinds of a command, in order.
fn kinds(events: &[Event]) -> Vec<&'static str> {
    events
        .iter()
        .map(|e| match &e.kind {
            EventKind::Book(_) => "book",
            EventKind::Replaced(_) => "replaced",
            EventKind::Balance(_) => "balance",
            EventKind::Trade(_) => "trade",
            _ => "other",
        })
        .collect()
}

#[test]
fn a_move_from_the_middle_of_a_queue_to_the_back_of_another_relinks_both() {
    let mut h = Harness::funded(5);
    let first = place_ok(&mut h, limit(1, "f", Side::Buy, "99", "1"));
    let moved = place_ok(&mut h, limit(2, "m", Side::Buy, "99", "2"));
    let last = place_ok(&mut h, limit(3, "l", Side::Buy, "99", "1"));
    let resident = place_ok(&mut h, limit(4, "r", Side::Buy, "98", "1"));
    let before = bal(&h, 2, "USD");
    let events = h.run_checked(replace(2, "m", Some("98"), None));
    // Off the old level, the replace, the reservation it gave back, then
    // onto the new level: the order a feed rebuilds the book from.
    assert_eq!(kinds(&events), ["book", "replaced", "balance", "book"]);
    assert_eq!(
        book_updates(&events),
        [
            (Side::Buy, units("99"), units("2")),
            (Side::Buy, units("98"), units("3"))
        ]
    );
    let after = bal(&h, 2, "USD");
    assert_eq!(after.0, before.0);
    assert!(after.1 > before.1, "a lower buy price holds less");
    let balance = events.iter().find_map(|e| match &e.kind {
        EventKind::Balance(b) => Some((b.account, b.total, b.available)),
        _ => None,
    });
    assert_eq!(balance, Some((2, after.0, after.1)));
    let view = open_order(&h, moved).expect("the moved order is open");
    assert_eq!((view.price, view.qty), (units("98"), units("2")));
    // The old level kept its two others in order, the new one has the
    // moved order behind its resident; a sweep meets them in that order.
    let sweep = exec(&mut h, limit(5, "s", Side::Sell, "98", "5"));
    let makers: Vec<OrderId> = trades(&sweep).iter().map(|t| t.2).collect();
    assert_eq!(makers, [first, last, resident, moved]);
    assert_eq!(open_order(&h, moved), None);
}

#[test]
fn a_move_of_the_only_order_on_its_level_empties_it_and_opens_another() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Sell, "101", "1"));
    let events = h.run_checked(replace(1, "a", Some("102"), None));
    // A sell's reservation is its lots: a new price leaves it as it was.
    assert_eq!(kinds(&events), ["book", "replaced", "book"]);
    assert_eq!(
        book_updates(&events),
        [
            (Side::Sell, units("101"), 0),
            (Side::Sell, units("102"), units("1"))
        ]
    );
    assert_eq!(bal(&h, 1, "BTC"), (units("100"), units("99")));
    h.run_checked(replace(1, "a", Some("101"), None));
    let taker = exec(&mut h, limit(2, "t", Side::Buy, "101", "1"));
    assert_eq!(trades(&taker), [(units("101"), units("1"), a, 2)]);
}
