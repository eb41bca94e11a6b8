//! Order entry by type and time in force: limit, market, IOC, FOK and
//! post-only, and price-time priority among them.

use exchange_testkit::engine::*;
use exchange_types::event;
use exchange_types::*;

#[test]
fn limit_order_that_does_not_cross_rests_and_reserves_notional_plus_fee() {
    let mut h = Harness::funded(1);
    let events = exec(&mut h, limit(1, "b", Side::Buy, "100", "1"));
    assert_eq!(names(&events), ["accepted", "balance", "book"]);
    assert_eq!(
        events[0].kind,
        EventKind::Accepted(event::Accepted {
            account: 1,
            client_order_id: coid("b"),
            order_id: 1,
            symbol: sym("BTC-USD"),
            side: Side::Buy,
            order_type: OrderType::Limit,
            price: Some(units("100")),
            qty: units("1"),
            tif: TimeInForce::Gtc,
            post_only: false,
            stp: SelfTradePrevention::CancelNewest,
            ext: None,
        })
    );
    // 100 notional + 5 bps taker fee, the largest fee the order may pay.
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("999899.95")));
    assert_eq!(
        book_updates(&events),
        [(Side::Buy, units("100"), units("1"))]
    );
    let order = open_order(&h, 1).expect("resting");
    assert_eq!(
        (order.price, order.qty, order.filled_qty),
        (units("100"), units("1"), 0)
    );
    assert_eq!(order.reserved, units("100.05"));
}

#[test]
fn sell_limit_reserves_base() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "s", Side::Sell, "100", "1.5"));
    assert_eq!(bal(&h, 1, "BTC"), (units("100"), units("98.5")));
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("1000000")));
    assert_eq!(open_order(&h, 1).map(|o| o.reserved), Some(units("1.5")));
}

#[test]
fn earlier_order_at_a_level_fills_first() {
    let mut h = Harness::funded(3);
    let first = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let second = place_ok(&mut h, limit(2, "b", Side::Sell, "100", "1"));
    let events = exec(&mut h, limit(3, "t", Side::Buy, "100", "1.5"));
    assert_eq!(
        trades(&events),
        [
            (units("100"), units("1"), first, 3),
            (units("100"), units("0.5"), second, 3)
        ]
    );
    assert_eq!(book(&h).asks, [(units("100"), units("0.5"))]);
    assert_eq!(open_ids(&h), [second]);
}

#[test]
fn taker_walks_levels_best_first_and_rests_beyond_its_limit() {
    let mut h = Harness::funded(3);
    let at_101 = place_ok(&mut h, limit(1, "a", Side::Sell, "101", "1"));
    let at_100 = place_ok(&mut h, limit(1, "b", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(2, "c", Side::Sell, "102", "1"));
    let events = exec(&mut h, limit(3, "t", Side::Buy, "101", "3"));
    assert_eq!(
        trades(&events),
        [
            (units("100"), units("1"), at_100, 4),
            (units("101"), units("1"), at_101, 4)
        ]
    );
    let view = book(&h);
    assert_eq!(view.bids, [(units("101"), units("1"))]);
    assert_eq!(view.asks, [(units("102"), units("1"))]);
}

#[test]
fn sell_taker_trades_at_the_higher_resting_bid() {
    let mut h = Harness::funded(2);
    let bid = place_ok(&mut h, limit(1, "b", Side::Buy, "100", "1"));
    let events = exec(&mut h, limit(2, "s", Side::Sell, "99", "1"));
    assert_eq!(trades(&events), [(units("100"), units("1"), bid, 2)]);
    // Proceeds at 100, less the 5 bps taker fee.
    assert_eq!(
        bal(&h, 2, "USD"),
        (units("1000099.95"), units("1000099.95"))
    );
    assert_eq!(bal(&h, 2, "BTC"), (units("99"), units("99")));
}

#[test]
fn limit_buy_at_exactly_the_best_ask_trades() {
    let mut h = Harness::funded(2);
    let ask = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let events = exec(&mut h, limit(2, "b", Side::Buy, "100", "1"));
    assert_eq!(trades(&events), [(units("100"), units("1"), ask, 2)]);
    assert_eq!(book(&h), exchange_core::BookView::default());
}

#[test]
fn market_buy_sweeps_levels_and_expires_the_remainder() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let b = place_ok(&mut h, limit(1, "b", Side::Sell, "101", "1"));
    let events = exec(&mut h, market(2, "m", Side::Buy, "3"));
    assert_eq!(
        trades(&events),
        [
            (units("100"), units("1"), a, 3),
            (units("101"), units("1"), b, 3)
        ]
    );
    assert_eq!(expiries(&events), [(3, units("1"), units("2"))]);
    assert!(book(&h).asks.is_empty());
    // 201 notional + 0.05 + 0.0505 taker fees; nothing stays reserved.
    assert_eq!(
        bal(&h, 2, "USD"),
        (units("999798.8995"), units("999798.8995"))
    );
    assert!(open_ids(&h).is_empty());
}

#[test]
fn market_sell_hits_bids_and_returns_the_unsold_base() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Buy, "100", "1"));
    let b = place_ok(&mut h, limit(1, "b", Side::Buy, "99", "1"));
    let events = exec(&mut h, market(2, "m", Side::Sell, "2.5"));
    assert_eq!(
        trades(&events),
        [
            (units("100"), units("1"), a, 3),
            (units("99"), units("1"), b, 3)
        ]
    );
    assert_eq!(expiries(&events), [(3, units("0.5"), units("2"))]);
    assert_eq!(bal(&h, 2, "BTC"), (units("98"), units("98")));
    // 199 proceeds less 0.05 + 0.0495 taker fees.
    assert_eq!(
        bal(&h, 2, "USD"),
        (units("1000198.9005"), units("1000198.9005"))
    );
}

#[test]
fn market_buy_on_an_empty_book_is_accepted_then_expires_whole() {
    let mut h = Harness::funded(1);
    let events = exec(&mut h, market(1, "m", Side::Buy, "1"));
    // Nothing to buy, so nothing is reserved.
    assert_eq!(names(&events), ["accepted", "expired"]);
    assert_eq!(expiries(&events), [(1, units("1"), 0)]);
    assert_eq!(bal(&h, 1, "USD"), (units("1000000"), units("1000000")));
}

#[test]
fn market_order_has_no_price_and_good_till_canceled_becomes_ioc() {
    let mut h = Harness::funded(1);
    let events = exec(
        &mut h,
        Place {
            tif: TimeInForce::Gtc,
            ..market(1, "m", Side::Sell, "1")
        },
    );
    match &events[0].kind {
        EventKind::Accepted(a) => {
            assert_eq!(
                (a.order_type, a.price, a.tif),
                (OrderType::Market, None, TimeInForce::Ioc)
            );
        }
        other => panic!("expected accepted, got {other:?}"),
    }
    assert_eq!(expiries(&events), [(1, units("1"), 0)]);
    assert!(open_ids(&h).is_empty());
}

#[test]
fn ioc_fills_what_it_can_and_expires_the_remainder() {
    let mut h = Harness::funded(2);
    let ask = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let events = exec(&mut h, ioc(limit(2, "i", Side::Buy, "100", "2")));
    assert_eq!(trades(&events), [(units("100"), units("1"), ask, 2)]);
    assert_eq!(expiries(&events), [(2, units("1"), units("1"))]);
    assert!(open_ids(&h).is_empty());
    assert_eq!(bal(&h, 2, "USD"), (units("999899.95"), units("999899.95")));
}

#[test]
fn ioc_that_does_not_cross_expires_whole_and_releases_its_reservation() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "101", "1"));
    let events = exec(&mut h, ioc(limit(2, "i", Side::Buy, "100", "1")));
    assert_eq!(
        names(&events),
        ["accepted", "balance", "balance", "expired"]
    );
    assert_eq!(expiries(&events), [(2, units("1"), 0)]);
    assert!(book(&h).bids.is_empty());
    assert_eq!(bal(&h, 2, "USD"), (units("1000000"), units("1000000")));
}

#[test]
fn fok_fills_completely_across_levels() {
    let mut h = Harness::funded(2);
    let a = place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let b = place_ok(&mut h, limit(1, "b", Side::Sell, "101", "1"));
    let events = exec(&mut h, fok(limit(2, "f", Side::Buy, "101", "2")));
    assert_eq!(
        trades(&events),
        [
            (units("100"), units("1"), a, 3),
            (units("101"), units("1"), b, 3)
        ]
    );
    assert!(expiries(&events).is_empty());
    assert_eq!(bal(&h, 2, "BTC"), (units("102"), units("102")));
}

#[test]
fn fok_that_cannot_fill_completely_expires_whole_and_trades_nothing() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let events = exec(&mut h, fok(limit(2, "f", Side::Buy, "100", "2")));
    assert_eq!(names(&events), ["accepted", "expired"]);
    assert_eq!(expiries(&events), [(2, units("2"), 0)]);
    assert_eq!(book(&h).asks, [(units("100"), units("1"))]);
    assert_eq!(bal(&h, 2, "USD"), (units("1000000"), units("1000000")));
}

#[test]
fn fok_does_not_count_liquidity_beyond_its_limit() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    place_ok(&mut h, limit(1, "b", Side::Sell, "102", "1"));
    let events = exec(&mut h, fok(limit(2, "f", Side::Buy, "101", "2")));
    assert!(trades(&events).is_empty());
    assert_eq!(expiries(&events), [(3, units("2"), 0)]);
    assert_eq!(
        book(&h).asks,
        [(units("100"), units("1")), (units("102"), units("1"))]
    );
}

#[test]
fn fok_sell_fills_against_bids() {
    let mut h = Harness::funded(2);
    let bid = place_ok(&mut h, limit(1, "b", Side::Buy, "100", "1"));
    let events = exec(&mut h, fok(limit(2, "f", Side::Sell, "100", "1")));
    assert_eq!(trades(&events), [(units("100"), units("1"), bid, 2)]);
    assert!(expiries(&events).is_empty());
}

#[test]
fn market_fok_that_cannot_fill_expires_whole() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let events = exec(&mut h, fok(market(2, "f", Side::Buy, "2")));
    assert_eq!(names(&events), ["accepted", "expired"]);
    assert_eq!(expiries(&events), [(2, units("2"), 0)]);
}

#[test]
fn post_only_that_does_not_cross_rests() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100.01", "1"));
    let events = exec(&mut h, post_only(limit(2, "p", Side::Buy, "100", "1")));
    assert!(matches!(
        events[0].kind,
        EventKind::Accepted(event::Accepted {
            post_only: true,
            ..
        })
    ));
    assert_eq!(book(&h).bids, [(units("100"), units("1"))]);
}

#[test]
fn post_only_at_exactly_the_best_opposite_price_would_take() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "a", Side::Sell, "100", "1"));
    let p = post_only(limit(2, "p", Side::Buy, "100", "1"));
    assert_rejected(&mut h, cmd(p), RejectReason::PostOnlyWouldTake);
}

#[test]
fn client_order_id_is_reusable_once_the_order_is_closed() {
    let mut h = Harness::funded(1);
    place_ok(&mut h, limit(1, "x", Side::Buy, "100", "1"));
    h.run_checked(cancel_client(1, "x"));
    let again = place_ok(&mut h, limit(1, "x", Side::Buy, "99", "1"));
    assert_eq!(again, 2);
    assert_eq!(open_ids(&h), [2]);
}

#[test]
fn different_accounts_may_use_the_same_client_order_id() {
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "x", Side::Buy, "100", "1"));
    place_ok(&mut h, limit(2, "x", Side::Buy, "100", "1"));
    assert_eq!(book(&h).bids, [(units("100"), units("2"))]);
}

#[test]
fn instruments_have_separate_books() {
    let mut h = Harness::funded(2);
    h.run_checked(add(eth_usd()));
    h.run_checked(deposit(1, "ETH", "10"));
    place_ok(&mut h, on("ETH-USD", limit(1, "e", Side::Sell, "100", "1")));
    let events = exec(&mut h, limit(2, "b", Side::Buy, "100", "1"));
    assert!(trades(&events).is_empty());
    assert_eq!(book(&h).bids, [(units("100"), units("1"))]);
    let eth = h.engine.book(&sym("ETH-USD"), 10).expect("listed");
    assert_eq!(eth.asks, [(units("100"), units("1"))]);
}

#[test]
fn ioc_and_fok_never_rest_and_leave_no_open_order_behind() {
    let mut h = Harness::funded(2);
    exec(&mut h, ioc(limit(1, "i", Side::Buy, "100", "1")));
    exec(&mut h, fok(limit(1, "f", Side::Sell, "101", "1")));
    assert_eq!(h.engine.open_order_count(), 0);
    assert_eq!(book(&h), exchange_core::BookView::default());
}
