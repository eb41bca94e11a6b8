//! Market- and limit-if-touched (take-profit) orders: held off the book
//! like stops, but triggered from the other side (a buy when the last
//! trade price falls to its stop price, a sell when it rises to it), then
//! entered as a market or a limit order. Every command runs with the
//! engine's audit.

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;

fn rejected(h: &mut Harness, command: Command) -> RejectReason {
    let before = observe(&h.engine);
    let events = h.run_checked(command);
    assert_same_state(&before, &observe(&h.engine));
    reject_reason(&events).expect("a reject")
}

fn accepted(events: &[Event]) -> &Accepted {
    match &events[0].kind {
        EventKind::Accepted(a) => a,
        other => panic!("accepted first, got {other:?}"),
    }
}

#[test]
fn a_buy_triggers_as_the_price_falls_to_it_and_a_sell_as_it_rises() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let buy = place_ok(&mut h, limit_if_touched(3, "b", Side::Buy, "95", "90", "1"));
    let sell = place_ok(
        &mut h,
        limit_if_touched(3, "s", Side::Sell, "105", "110", "1"),
    );
    assert!(book(&h).bids.is_empty() && book(&h).asks.is_empty());
    // Moving away from either trigger does nothing: a rise past 100 is no
    // touch for the buy, a fall is none for the sell.
    assert!(triggered(&print(&mut h, "104", "1")).is_empty());
    assert!(triggered(&print(&mut h, "96", "1")).is_empty());
    assert_eq!(
        triggered(&print(&mut h, "95", "1")),
        [(buy, units("95"), units("95"))]
    );
    assert!(triggered(&print(&mut h, "104.99", "1")).is_empty());
    assert_eq!(
        triggered(&print(&mut h, "105", "1")),
        [(sell, units("105"), units("105"))]
    );
}

#[test]
fn limit_if_touched_enters_as_a_limit_order_at_its_price() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let events = exec(
        &mut h,
        limit_if_touched(3, "tp", Side::Buy, "95", "96", "1"),
    );
    let a = accepted(&events);
    assert_eq!(a.order_type, OrderType::LimitIfTouched);
    assert_eq!(a.price, Some(units("96")));
    assert_eq!(a.ext.as_ref().and_then(|e| e.stop_price), Some(units("95")));
    let id = a.order_id;
    // Reserved like a limit buy at 96.
    assert_eq!(bal(&h, 3, "USD").1, units("1000000") - units("96.048"));
    assert_eq!(
        open_order(&h, id).and_then(|o| o.stop_price),
        Some(units("95"))
    );
    let events = print(&mut h, "95", "1");
    assert_eq!(triggered(&events), [(id, units("95"), units("95"))]);
    // Nothing offered at 96 or below: it rests as a bid at its price.
    assert_eq!(book(&h).bids, [(units("96"), units("1"))]);
    let o = open_order(&h, id).expect("rests");
    assert_eq!((o.price, o.stop_price), (units("96"), None));
}

#[test]
fn market_if_touched_sell_enters_as_a_market_order() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let events = exec(&mut h, market_if_touched(3, "tp", Side::Sell, "105", "1"));
    let a = accepted(&events);
    assert_eq!((a.order_type, a.price), (OrderType::MarketIfTouched, None));
    let id = a.order_id;
    assert_eq!(bal(&h, 3, "BTC").1, units("99"));
    let bid = place_ok(&mut h, limit(2, "bid", Side::Buy, "101", "2"));
    let events = print(&mut h, "105", "1");
    assert_eq!(triggered(&events), [(id, units("105"), units("105"))]);
    let from = names(&events)
        .iter()
        .position(|n| *n == "triggered")
        .expect("triggered");
    // It sells at any price: the best bid, far below its stop price.
    assert_eq!(
        trades(&events[from..]),
        [(units("101"), units("1"), bid, id)]
    );
    assert_eq!(open_order(&h, id), None);
}

#[test]
fn market_if_touched_buy_reserves_at_its_collar_bound_and_what_it_misses_expires() {
    let mut h = funded_with(collared(1_000, "100"), 3);
    print(&mut h, "100", "1");
    let id = place_ok(&mut h, market_if_touched(3, "tp", Side::Buy, "95", "1"));
    // Protection: the stop plus the 10% collar, 104.5.
    let protection = units("104.5");
    assert_eq!(
        open_order(&h, id).map(|o| o.reserved),
        Some(protection + protection / 2_000)
    );
    place_ok(&mut h, limit(1, "ask", Side::Sell, "97", "0.5"));
    let events = print(&mut h, "95", "1");
    assert_eq!(triggered(&events).len(), 1);
    let from = names(&events)
        .iter()
        .position(|n| *n == "triggered")
        .expect("triggered");
    assert_eq!(trades(&events[from..]).len(), 1);
    // A market order does not rest: the rest expires, nothing stays held.
    assert_eq!(
        expiries(&events).iter().map(|e| e.0).collect::<Vec<_>>(),
        [id]
    );
    assert_eq!(open_order(&h, id), None);
    let usd = bal(&h, 3, "USD");
    assert_eq!(usd.0, usd.1);
}

#[test]
fn take_profit_and_stop_loss_pair_the_take_profit_triggers_and_cancels_the_stop() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    // A long position's exits: take profit at 110 (sell no lower than
    // 109), stop loss at 90.
    let tp = place_ok(
        &mut h,
        limit_if_touched(3, "tp", Side::Sell, "110", "109", "1"),
    );
    let events = exec(
        &mut h,
        oco(stop_market(3, "sl", Side::Sell, "90", "1"), "tp"),
    );
    assert_eq!(
        accepted(&events).ext.as_ref().and_then(|e| e.oco_with),
        Some(coid("tp"))
    );
    let sl = accepted(&events).order_id;
    assert!(triggered(&print(&mut h, "105", "1")).is_empty());
    place_ok(&mut h, limit(2, "bid", Side::Buy, "109.5", "1"));
    let events = print(&mut h, "110", "1");
    assert_eq!(triggered(&events), [(tp, units("110"), units("110"))]);
    assert_eq!(
        cancels(&events)
            .iter()
            .map(|c| (c.0, c.1))
            .collect::<Vec<_>>(),
        [(sl, CancelReason::OneCancelsOther)]
    );
    let from = names(&events)
        .iter()
        .position(|n| *n == "triggered")
        .expect("triggered");
    assert_eq!(trades(&events[from..]).len(), 1, "sold to the 109.5 bid");
    assert_eq!(h.engine.open_order_count(), 0);
    // The stop loss is gone: the fall that would have reached it does not.
    assert!(triggered(&print(&mut h, "90", "1")).is_empty());
}

#[test]
fn take_profit_and_stop_loss_pair_the_stop_triggers_and_cancels_the_take_profit() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let tp = place_ok(&mut h, market_if_touched(3, "tp", Side::Sell, "110", "1"));
    let sl = place_ok(
        &mut h,
        oco(stop_market(3, "sl", Side::Sell, "90", "1"), "tp"),
    );
    let events = print(&mut h, "90", "1");
    assert_eq!(triggered(&events), [(sl, units("90"), units("90"))]);
    assert_eq!(
        cancels(&events)
            .iter()
            .map(|c| (c.0, c.1))
            .collect::<Vec<_>>(),
        [(tp, CancelReason::OneCancelsOther)]
    );
    assert_eq!(open_order(&h, tp), None);
}

#[test]
fn an_if_touched_order_already_touched_or_trailing_is_refused() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    // As a stop already reached is: at or beyond the last price.
    for place in [
        limit_if_touched(3, "a", Side::Buy, "100", "101", "1"),
        limit_if_touched(3, "b", Side::Buy, "101", "101", "1"),
        market_if_touched(3, "c", Side::Sell, "100", "1"),
        market_if_touched(3, "d", Side::Sell, "99", "1"),
    ] {
        assert_eq!(
            rejected(&mut h, cmd(place)),
            RejectReason::StopWouldTriggerImmediately
        );
    }
    let trailing = with_ext(market_if_touched(3, "t", Side::Sell, "1", "1"), |e| {
        (e.stop_price, e.trailing) = (None, Some(Trailing::Bps(100)));
    });
    assert_eq!(
        rejected(&mut h, cmd(trailing)),
        RejectReason::TrailingNotAllowed
    );
    // A market-if-touched buy needs a collar to bound what it reserves.
    assert_eq!(
        rejected(&mut h, cmd(market_if_touched(3, "m", Side::Buy, "95", "1"))),
        RejectReason::StopMarketBuyNeedsCollar
    );
}

#[test]
fn replacing_an_if_touched_order_moves_its_trigger_and_its_limit() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let id = place_ok(
        &mut h,
        limit_if_touched(3, "tp", Side::Sell, "105", "104", "1"),
    );
    // A new stop price already touched is refused, as for a stop.
    assert_eq!(
        rejected(&mut h, replace_stop(3, "tp", "100")),
        RejectReason::StopWouldTriggerImmediately
    );
    h.run_checked(replace_stop(3, "tp", "107"));
    h.run_checked(replace(3, "tp", Some("106"), None));
    let o = open_order(&h, id).expect("open");
    assert_eq!((o.price, o.stop_price), (units("106"), Some(units("107"))));
    assert!(triggered(&print(&mut h, "105", "1")).is_empty());
    assert_eq!(
        triggered(&print(&mut h, "107", "1")),
        [(id, units("107"), units("107"))]
    );
    assert_eq!(book(&h).asks, [(units("106"), units("1"))]);
    // A market-if-touched order has no price of its own to replace.
    place_ok(&mut h, market_if_touched(3, "m", Side::Sell, "110", "1"));
    assert_eq!(
        rejected(&mut h, replace(3, "m", Some("111"), None)),
        RejectReason::PriceNotAllowed
    );
}

#[test]
fn stops_and_if_touched_orders_reached_together_trigger_oldest_first_by_direction() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    // A rise to 103 reaches the buy stop at 102 and the sell take-profits
    // at 101 and 102: the lowest first, then by age at the same price.
    let stop = place_ok(&mut h, {
        let p = limit_if_touched(3, "x", Side::Buy, "102", "90", "1");
        Place {
            order_type: OrderType::StopLimit,
            ..p
        }
    });
    let tp102 = place_ok(
        &mut h,
        limit_if_touched(3, "y", Side::Sell, "102", "120", "1"),
    );
    let tp101 = place_ok(
        &mut h,
        limit_if_touched(3, "z", Side::Sell, "101", "120", "1"),
    );
    let events = print(&mut h, "103", "1");
    let order: Vec<OrderId> = triggered(&events).iter().map(|t| t.0).collect();
    assert_eq!(order, [tp101, stop, tp102]);
}

#[test]
fn snapshot_with_if_touched_orders_restores_to_the_same_future() {
    let mut h = funded_with(collared(1_000, "100"), 3);
    print(&mut h, "100", "1");
    place_ok(
        &mut h,
        limit_if_touched(3, "tp", Side::Sell, "106", "105", "1"),
    );
    place_ok(
        &mut h,
        oco(stop_market(3, "sl", Side::Sell, "95", "1"), "tp"),
    );
    place_ok(&mut h, market_if_touched(3, "mb", Side::Buy, "97", "1"));
    place_ok(&mut h, market_if_touched(3, "ms", Side::Sell, "104", "0.5"));
    place_ok(
        &mut h,
        limit_if_touched(3, "lb", Side::Buy, "98", "99", "1"),
    );
    let restored = Engine::restore(&h.engine.snapshot()).expect("restores");
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    assert_eq!(restored.audit(), Ok(()));
    assert_eq!(restored.open_orders(), h.engine.open_orders());
    let mut twin = Harness {
        engine: restored,
        ts: h.ts,
    };
    let mut fired = 0;
    for price in ["104", "106", "98", "97", "95"] {
        for (account, side) in [(1, Side::Sell), (2, Side::Buy)] {
            let p = limit(account, &format!("p{}", h.ts), side, price, "1");
            let events = h.run_checked(cmd(p.clone()));
            fired += triggered(&events).len();
            assert_eq!(events, twin.run_checked(cmd(p)));
        }
    }
    assert!(fired >= 4, "only {fired} triggered");
    assert_eq!(h.engine.state_hash(), twin.engine.state_hash());
}
