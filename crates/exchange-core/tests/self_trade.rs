//! Self-trade prevention: the taker's mode decides what happens when it
//! meets a resting order of its own account, including how fill-or-kill
//! feasibility and market-buy reservations account for it.

use exchange_testkit::engine::*;
use exchange_types::*;

use CancelReason::SelfTrade;
use SelfTradePrevention::{CancelBoth, CancelNewest, CancelOldest, Decrement};

#[test]
fn cancel_newest_cancels_the_incoming_order_and_keeps_the_resting_one() {
    let mut h = Harness::funded(1);
    let resting = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(limit(1, "b", Side::Buy, "100", "1"), CancelNewest),
    );
    assert_eq!(
        names(&events),
        ["accepted", "balance", "canceled", "balance"]
    );
    assert_eq!(cancels(&events), [(2, SelfTrade, units("1"), 0, 0)]);
    assert!(trades(&events).is_empty());
    assert_eq!(open_ids(&h), [resting]);
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("1000000")));
}

#[test]
fn cancel_newest_keeps_fills_made_before_meeting_own_order() {
    let mut h = Harness::funded(2);
    let other = place_ok(&mut h, limit(2, "o", Side::Sell, "100", "0.5"));
    let own = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(limit(1, "b", Side::Buy, "100", "1"), CancelNewest),
    );
    assert_eq!(trades(&events), [(units("100"), units("0.5"), other, 3)]);
    assert_eq!(
        cancels(&events),
        [(3, SelfTrade, units("0.5"), units("0.5"), 0)]
    );
    assert_eq!(open_ids(&h), [own]);
    assert_eq!(book(&h).asks, [(units("100"), units("1"))]);
    // 50 notional + 0.025 taker fee; the canceled half holds nothing.
    assert_eq!(
        bal(&h, 1, "USD"),
        (units("999949.975"), units("999949.975"))
    );
}

#[test]
fn own_order_behind_enough_liquidity_is_never_reached() {
    let mut h = Harness::funded(2);
    let other = place_ok(&mut h, limit(2, "o", Side::Sell, "100", "1"));
    let own = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(limit(1, "b", Side::Buy, "100", "1"), CancelBoth),
    );
    assert_eq!(trades(&events), [(units("100"), units("1"), other, 3)]);
    assert!(cancels(&events).is_empty());
    assert_eq!(open_ids(&h), [own]);
}

#[test]
fn cancel_oldest_cancels_the_resting_order_and_keeps_matching() {
    let mut h = Harness::funded(2);
    let own = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let other = place_ok(&mut h, limit(2, "o", Side::Sell, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(limit(1, "b", Side::Buy, "100", "1.5"), CancelOldest),
    );
    assert_eq!(cancels(&events), [(own, SelfTrade, units("1"), 0, 0)]);
    assert_eq!(trades(&events), [(units("100"), units("1"), other, 3)]);
    let view = book(&h);
    assert_eq!(view.bids, [(units("100"), units("0.5"))]);
    assert!(view.asks.is_empty());
    assert_eq!(bal(&h, 1, "BTC"), (units("101"), units("101")));
}

#[test]
fn cancel_oldest_cancels_every_own_order_in_the_way() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let b = place_ok(&mut h, limit(1, "b", Side::Sell, "101", "1"));
    let other = place_ok(&mut h, limit(2, "o", Side::Sell, "102", "1"));
    let events = exec(
        &mut h,
        with_stp(limit(1, "t", Side::Buy, "102", "2"), CancelOldest),
    );
    assert_eq!(
        cancels(&events),
        [
            (a, SelfTrade, units("1"), 0, 0),
            (b, SelfTrade, units("1"), 0, 0)
        ]
    );
    assert_eq!(trades(&events), [(units("102"), units("1"), other, 4)]);
    assert_eq!(book(&h).bids, [(units("102"), units("1"))]);
    assert_eq!(open_ids(&h), [4]);
}

#[test]
fn cancel_both_cancels_the_resting_and_the_incoming_order() {
    let mut h = Harness::funded(1);
    let own = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(limit(1, "b", Side::Buy, "100", "0.4"), CancelBoth),
    );
    assert_eq!(
        cancels(&events),
        [
            (own, SelfTrade, units("1"), 0, 0),
            (2, SelfTrade, units("0.4"), 0, 0)
        ]
    );
    assert_eq!(book(&h), exchange_core::BookView::default());
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("1000000")));
    assert_eq!(bal(&h, 1, "BTC"), (units("100"), units("100")));
}

#[test]
fn cancel_both_keeps_fills_made_before_meeting_own_order() {
    let mut h = Harness::funded(2);
    let other = place_ok(&mut h, limit(2, "o", Side::Sell, "100", "0.5"));
    let own = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(limit(1, "b", Side::Buy, "100", "1"), CancelBoth),
    );
    assert_eq!(trades(&events), [(units("100"), units("0.5"), other, 3)]);
    assert_eq!(
        cancels(&events),
        [
            (own, SelfTrade, units("1"), 0, 0),
            (3, SelfTrade, units("0.5"), units("0.5"), 0)
        ]
    );
    assert!(open_ids(&h).is_empty());
}

#[test]
fn decrement_of_equal_sizes_cancels_both_without_a_trade() {
    let mut h = Harness::funded(1);
    let own = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "0.5"));
    let events = exec(
        &mut h,
        with_stp(limit(1, "b", Side::Buy, "100", "0.5"), Decrement),
    );
    assert_eq!(
        cancels(&events),
        [
            (own, SelfTrade, units("0.5"), 0, 0),
            (2, SelfTrade, units("0.5"), 0, 0)
        ]
    );
    assert!(trades(&events).is_empty());
    assert_eq!(bal(&h, 0, "USD"), (0, 0));
    assert!(open_ids(&h).is_empty());
}

#[test]
fn decrement_by_a_smaller_taker_shrinks_the_resting_order_in_place() {
    let mut h = Harness::funded(3);
    let own = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "o", Side::Sell, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(limit(1, "b", Side::Buy, "100", "0.3"), Decrement),
    );
    assert_eq!(
        cancels(&events),
        [
            (own, SelfTrade, units("0.3"), 0, units("0.7")),
            (3, SelfTrade, units("0.3"), 0, 0)
        ]
    );
    assert_eq!(
        book_updates(&events),
        [(Side::Sell, units("100"), units("1.7"))]
    );
    assert_eq!(open_order(&h, own).map(|o| o.qty), Some(units("0.7")));
    assert_eq!(bal(&h, 1, "BTC"), (units("100"), units("99.3")));
    // Still first in the queue.
    let later = exec(&mut h, limit(3, "t", Side::Buy, "100", "0.5"));
    assert_eq!(trades(&later), [(units("100"), units("0.5"), own, 4)]);
}

#[test]
fn decrement_by_a_larger_taker_cancels_the_resting_order_and_keeps_matching() {
    let mut h = Harness::funded(2);
    let own = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "0.4"));
    let other = place_ok(&mut h, limit(2, "o", Side::Sell, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(limit(1, "b", Side::Buy, "100", "1"), Decrement),
    );
    assert_eq!(
        cancels(&events),
        [
            (own, SelfTrade, units("0.4"), 0, 0),
            (3, SelfTrade, units("0.4"), 0, units("0.6"))
        ]
    );
    assert_eq!(trades(&events), [(units("100"), units("0.6"), other, 3)]);
    assert_eq!(book(&h).asks, [(units("100"), units("0.4"))]);
    // The decrement trimmed the reservation to 0.6 at 100; the fill used it.
    assert_eq!(bal(&h, 1, "USD"), (units("999939.97"), units("999939.97")));
}

#[test]
fn decrement_of_a_partially_filled_resting_order_reports_its_leaves() {
    let mut h = Harness::funded(2);
    let own = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    exec(&mut h, limit(2, "o", Side::Buy, "100", "0.4"));
    let events = exec(
        &mut h,
        with_stp(limit(1, "b", Side::Buy, "100", "0.2"), Decrement),
    );
    assert_eq!(
        cancels(&events),
        [
            (own, SelfTrade, units("0.2"), units("0.4"), units("0.4")),
            (3, SelfTrade, units("0.2"), 0, 0)
        ]
    );
    let order = open_order(&h, own).expect("still open");
    assert_eq!(
        (order.qty, order.filled_qty, order.reserved),
        (units("0.8"), units("0.4"), units("0.4"))
    );
    assert_eq!(book(&h).asks, [(units("100"), units("0.4"))]);
    assert_eq!(bal(&h, 1, "BTC"), (units("99.6"), units("99.2")));
}

#[test]
fn decrement_of_a_resting_buy_releases_the_quote_it_no_longer_needs() {
    let mut h = Harness::funded(1);
    let own = place_ok(&mut h, limit(1, "b", Side::Buy, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(limit(1, "s", Side::Sell, "100", "0.4"), Decrement),
    );
    assert_eq!(
        cancels(&events),
        [
            (own, SelfTrade, units("0.4"), 0, units("0.6")),
            (2, SelfTrade, units("0.4"), 0, 0)
        ]
    );
    // 0.6 at 100 plus 5 bps.
    assert_eq!(
        open_order(&h, own).map(|o| o.reserved),
        Some(units("60.03"))
    );
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("999939.97")));
    assert_eq!(bal(&h, 1, "BTC"), (units("100"), units("100")));
}

#[test]
fn fok_cancel_newest_meeting_own_order_expires_whole_and_cancels_nothing() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "o", Side::Sell, "101", "1"));
    let events = exec(
        &mut h,
        with_stp(fok(limit(1, "f", Side::Buy, "101", "1")), CancelNewest),
    );
    assert_eq!(names(&events), ["accepted", "expired"]);
    assert_eq!(expiries(&events), [(3, units("1"), 0)]);
    assert_eq!(open_ids(&h), [1, 2]);
}

#[test]
fn fok_cancel_both_meeting_own_order_expires_whole_and_cancels_nothing() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "o", Side::Sell, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(fok(limit(1, "f", Side::Buy, "100", "1")), CancelBoth),
    );
    assert_eq!(names(&events), ["accepted", "expired"]);
    assert_eq!(open_ids(&h), [1, 2]);
}

#[test]
fn fok_cancel_oldest_fills_from_others_and_cancels_own_orders_in_the_way() {
    let mut h = Harness::funded(2);
    let own = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let other = place_ok(&mut h, limit(2, "o", Side::Sell, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(fok(limit(1, "f", Side::Buy, "100", "1")), CancelOldest),
    );
    assert_eq!(cancels(&events), [(own, SelfTrade, units("1"), 0, 0)]);
    assert_eq!(trades(&events), [(units("100"), units("1"), other, 3)]);
    assert!(expiries(&events).is_empty());
}

#[test]
fn fok_cancel_oldest_that_cannot_fill_leaves_own_orders_alone() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "o", Side::Sell, "100", "0.5"));
    let events = exec(
        &mut h,
        with_stp(fok(limit(1, "f", Side::Buy, "100", "1")), CancelOldest),
    );
    assert_eq!(names(&events), ["accepted", "expired"]);
    assert_eq!(open_ids(&h), [1, 2]);
    assert_eq!(book(&h).asks, [(units("100"), units("1.5"))]);
}

#[test]
fn fok_decrement_meeting_own_order_expires_whole_because_a_decrement_is_no_fill() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "0.5"));
    place_ok(&mut h, limit(2, "o", Side::Sell, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(fok(limit(1, "f", Side::Buy, "100", "1")), Decrement),
    );
    assert_eq!(names(&events), ["accepted", "expired"]);
    assert_eq!(expiries(&events), [(3, units("1"), 0)]);
    assert_eq!(book(&h).asks, [(units("100"), units("1.5"))]);
}

#[test]
fn market_buy_cancel_oldest_reserves_only_for_other_accounts_liquidity() {
    let mut h = Harness::funded(2);
    let own = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1"));
    let other = place_ok(&mut h, limit(2, "o", Side::Sell, "101", "1"));
    let events = exec(
        &mut h,
        with_stp(market(1, "m", Side::Buy, "1"), CancelOldest),
    );
    // The reservation is 101 + 5 bps: the own order at 100 would be canceled.
    assert_eq!(
        balance_updates(&events)[0],
        (1, "USD".to_string(), units("1000000"), units("999898.9495"))
    );
    assert_eq!(cancels(&events), [(own, SelfTrade, units("1"), 0, 0)]);
    assert_eq!(trades(&events), [(units("101"), units("1"), other, 3)]);
    assert_eq!(
        bal(&h, 1, "USD"),
        (units("999898.9495"), units("999898.9495"))
    );
}

#[test]
fn market_sell_cancel_newest_stops_at_own_order_without_expiring() {
    let mut h = Harness::funded(2);
    let other = place_ok(&mut h, limit(2, "o", Side::Buy, "101", "0.5"));
    let own = place_ok(&mut h, limit(1, "b", Side::Buy, "100", "1"));
    let events = exec(
        &mut h,
        with_stp(market(1, "m", Side::Sell, "1"), CancelNewest),
    );
    assert_eq!(trades(&events), [(units("101"), units("0.5"), other, 3)]);
    assert_eq!(
        cancels(&events),
        [(3, SelfTrade, units("0.5"), units("0.5"), 0)]
    );
    assert!(expiries(&events).is_empty());
    assert_eq!(open_ids(&h), [own]);
    assert_eq!(bal(&h, 1, "BTC"), (units("99.5"), units("99.5")));
}

#[test]
fn market_buy_decrement_reserves_for_what_remains_after_the_decrement() {
    let mut h = Harness::funded(2);
    let own = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "0.3"));
    let other = place_ok(&mut h, limit(2, "o", Side::Sell, "101", "1"));
    let events = exec(&mut h, with_stp(market(1, "m", Side::Buy, "1"), Decrement));
    // 0.7 at 101 is 70.7, plus 5 bps (0.03535).
    assert_eq!(
        balance_updates(&events)[0],
        (
            1,
            "USD".to_string(),
            units("1000000"),
            units("999929.26465")
        )
    );
    assert_eq!(
        cancels(&events),
        [
            (own, SelfTrade, units("0.3"), 0, 0),
            (3, SelfTrade, units("0.3"), 0, units("0.7"))
        ]
    );
    assert_eq!(trades(&events), [(units("101"), units("0.7"), other, 3)]);
    assert!(expiries(&events).is_empty());
    assert_eq!(
        bal(&h, 1, "USD"),
        (units("999929.26465"), units("999929.26465"))
    );
}
