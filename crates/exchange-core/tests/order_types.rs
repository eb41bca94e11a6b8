//! Market-to-limit orders and the minimum acceptable quantity, with the
//! venues' published examples (docs/market-model.md has the rules and
//! their sources). Every command runs with `Engine::audit` after it.

use exchange_testkit::engine::*;
use exchange_types::*;

fn expired(events: &[Event]) -> Vec<(u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Expired(x) => Some((x.expired_qty, x.filled_qty)),
            _ => None,
        })
        .collect()
}

fn accepted_price(events: &[Event]) -> Option<u64> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Accepted(a) => a.price,
        _ => None,
    })
}

/// CME Globex, "iLink Order Types", Market-Limit Order (Bid) with Market:
/// a bid for 15 with the best offer at 90025 fills 2 there and the other
/// 13 rest on the book at 90025. A deeper offer is not reached.
#[test]
fn cme_market_limit_bid_fills_at_the_best_offer_and_rests_there() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "o1", Side::Sell, "90025", "0.0002"));
    place_ok(&mut h, limit(2, "o2", Side::Sell, "90050", "0.0010"));
    let events = exec(&mut h, market_to_limit(1, "b", Side::Buy, "0.0015"));
    // It is reported as the limit order it became.
    assert_eq!(accepted_price(&events), Some(units("90025")));
    assert_eq!(trades(&events), [(units("90025"), units("0.0002"), 1, 3)]);
    let rest = open_order(&h, 3).expect("the rest is on the book");
    assert_eq!(
        (rest.price, rest.qty - rest.filled_qty, rest.tif),
        (units("90025"), units("0.0013"), TimeInForce::Gtc)
    );
    assert_eq!(
        book(&h).bids,
        [(units("90025"), units("0.0013"))],
        "it bids where it traded"
    );
    assert_eq!(book(&h).asks, [(units("90050"), units("0.0010"))]);
    // Its reservation is exactly the rest at its price with the largest fee.
    let notional = 9_002_500_000_000u64 * 13 / 10_000;
    assert_eq!(rest.reserved, notional + notional * 5 / 10_000);
}

/// CME Globex, "iLink Order Types", Market-Limit Order (Bid) with No
/// Market: with no offer working the order is rejected.
#[test]
fn cme_market_limit_bid_without_an_offer_is_rejected() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "bid", Side::Buy, "90000", "0.0002"));
    assert_rejected(
        &mut h,
        cmd(market_to_limit(1, "b", Side::Buy, "0.0015")),
        RejectReason::MarketToLimitNoOpposite,
    );
}

/// Euronext (NYSE Euronext bonds, "Order Types and Processing", Market to
/// Limit Order): entered in continuous trading without a price, a sell
/// becomes a limit order at the best bid.
#[test]
fn euronext_market_to_limit_sell_becomes_a_limit_at_the_best_bid() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "b1", Side::Buy, "101", "1"));
    place_ok(&mut h, limit(2, "b2", Side::Buy, "101", "1"));
    place_ok(&mut h, limit(2, "b3", Side::Buy, "100", "5"));
    let events = exec(&mut h, market_to_limit(1, "s", Side::Sell, "3"));
    // Both orders at the best bid, in time priority; none at 100.
    assert_eq!(
        trades(&events),
        [
            (units("101"), units("1"), 1, 4),
            (units("101"), units("1"), 2, 4)
        ]
    );
    assert_eq!(book(&h).asks, [(units("101"), units("1"))]);
    assert_eq!(book(&h).bids, [(units("100"), units("5"))]);
}

#[test]
fn a_market_to_limit_ioc_trades_the_best_level_and_expires_the_rest() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "a1", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "a2", Side::Sell, "102", "1"));
    let events = exec(&mut h, ioc(market_to_limit(1, "b", Side::Buy, "2")));
    assert_eq!(trades(&events), [(units("100"), units("1"), 1, 3)]);
    assert_eq!(expired(&events), [(units("1"), units("1"))]);
    assert_eq!(open_order(&h, 3), None);
    assert_eq!(bal(&h, 1, "USD").0, bal(&h, 1, "USD").1, "nothing held");
}

#[test]
fn a_market_to_limit_meeting_its_own_order_follows_self_trade_prevention() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "own", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "other", Side::Sell, "100", "1"));
    let order = with_stp(
        market_to_limit(1, "b", Side::Buy, "2"),
        SelfTradePrevention::CancelOldest,
    );
    let events = exec(&mut h, order);
    assert_eq!(trades(&events), [(units("100"), units("1"), 2, 3)]);
    assert_eq!(book(&h).bids, [(units("100"), units("1"))]);
    assert!(book(&h).asks.is_empty());
}

/// CME Globex, "Order Types", Minimum Order Quantity: at least the
/// minimum must fill at once, and then the rest goes on the book.
#[test]
fn cme_minimum_quantity_met_rests_the_remainder() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "a1", Side::Sell, "100", "2"));
    place_ok(&mut h, limit(2, "a2", Side::Sell, "101", "1"));
    let order = with_min_qty(limit(1, "b", Side::Buy, "101", "5"), "3");
    let events = exec(&mut h, order);
    // Exactly the minimum, over two levels and two resting orders.
    assert_eq!(
        trades(&events),
        [
            (units("100"), units("2"), 1, 3),
            (units("101"), units("1"), 2, 3)
        ]
    );
    assert_eq!(book(&h).bids, [(units("101"), units("2"))]);
}

/// CME Globex, "Order Types", Minimum Order Quantity: if the minimum
/// cannot fill, the entire order is cancelled; here nothing else changes.
#[test]
fn cme_minimum_quantity_not_met_cancels_the_whole_order_and_changes_nothing() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "a1", Side::Sell, "100", "2"));
    let (usd, btc, asks) = (bal(&h, 1, "USD"), bal(&h, 1, "BTC"), book(&h).asks);
    let order = with_min_qty(limit(1, "b", Side::Buy, "100", "5"), "2.0001");
    let events = exec(&mut h, order);
    assert_eq!(names(&events), ["accepted", "expired"]);
    assert_eq!(expired(&events), [(units("5"), 0)]);
    assert_eq!(
        (bal(&h, 1, "USD"), bal(&h, 1, "BTC"), book(&h).asks),
        (usd, btc, asks)
    );
    assert_eq!(open_ids(&h), [1]);
}

/// CME Globex, "Order Types", Minimum Order Quantity: a minimum equal to
/// the order's quantity fills it whole at once or cancels it.
#[test]
fn cme_minimum_quantity_of_the_whole_order_is_fill_or_kill() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "a1", Side::Sell, "100", "2"));
    let short = exec(
        &mut h,
        with_min_qty(limit(1, "b", Side::Buy, "100", "3"), "3"),
    );
    assert_eq!(expired(&short), [(units("3"), 0)]);
    let whole = exec(
        &mut h,
        with_min_qty(limit(1, "c", Side::Buy, "100", "2"), "2"),
    );
    assert_eq!(trades(&whole), [(units("100"), units("2"), 1, 3)]);
}

/// NYSE Euronext, "Execution Parameters", Minimum-quantity Orders: the
/// minimum holds only when the order is entered; the part left on the
/// market then trades like any other, in any size.
#[test]
fn euronext_minimum_quantity_is_judged_on_entry_only() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "a1", Side::Sell, "100", "2"));
    let id = place_ok(
        &mut h,
        with_min_qty(limit(1, "b", Side::Buy, "100", "5"), "2"),
    );
    let small = exec(&mut h, limit(2, "s", Side::Sell, "100", "0.5"));
    assert_eq!(trades(&small), [(units("100"), units("0.5"), id, 3)]);
    assert_eq!(book(&h).bids, [(units("100"), units("2.5"))]);
}

#[test]
fn fill_or_kill_with_a_minimum_needs_the_whole_quantity() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "a1", Side::Sell, "100", "2"));
    let order = fok(with_min_qty(limit(1, "b", Side::Buy, "100", "3"), "1"));
    let events = exec(&mut h, order);
    assert!(trades(&events).is_empty());
    assert_eq!(expired(&events), [(units("3"), 0)]);
    let order = fok(with_min_qty(limit(1, "c", Side::Buy, "100", "2"), "1"));
    assert_eq!(trades(&exec(&mut h, order)).len(), 1);
}

#[test]
fn immediate_and_market_orders_with_a_minimum() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "a1", Side::Sell, "100", "2"));
    place_ok(&mut h, limit(2, "a2", Side::Sell, "105", "2"));
    let missed = exec(
        &mut h,
        with_min_qty(market(1, "m1", Side::Buy, "6"), "4.0001"),
    );
    assert_eq!(expired(&missed), [(units("6"), 0)]);
    let met = exec(&mut h, with_min_qty(market(1, "m2", Side::Buy, "6"), "4"));
    assert_eq!(trades(&met).len(), 2);
    assert_eq!(expired(&met), [(units("2"), units("4"))]);
    assert!(book(&h).asks.is_empty());
}

#[test]
fn a_minimum_counts_only_what_self_trade_prevention_lets_trade() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "own", Side::Sell, "100", "2"));
    place_ok(&mut h, limit(2, "other", Side::Sell, "100", "1"));
    let order = with_stp(
        with_min_qty(limit(1, "b", Side::Buy, "100", "3"), "2"),
        SelfTradePrevention::CancelOldest,
    );
    let events = exec(&mut h, order);
    assert!(trades(&events).is_empty(), "only 1 could trade");
    assert_eq!(open_ids(&h), [1, 2], "the own order was not canceled");
}

#[test]
fn a_market_to_limit_order_with_a_minimum_counts_the_best_level_only() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(2, "a1", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "a2", Side::Sell, "101", "5"));
    let short = exec(
        &mut h,
        with_min_qty(market_to_limit(1, "b", Side::Buy, "3"), "2"),
    );
    assert_eq!(expired(&short), [(units("3"), 0)]);
    let met = exec(
        &mut h,
        with_min_qty(market_to_limit(1, "c", Side::Buy, "3"), "1"),
    );
    assert_eq!(trades(&met), [(units("100"), units("1"), 1, 4)]);
    assert_eq!(book(&h).bids, [(units("100"), units("2"))]);
}
