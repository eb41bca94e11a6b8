//! Stop, stop-limit and trailing stop orders, and one-cancels-other pairs:
//! held off the book until the last trade price reaches them, then entered
//! as market or limit orders in a fixed order. If-touched orders have
//! their own tests (`if_touched.rs`) and join the random streams here.

use std::collections::BTreeMap;

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;

fn rejected(h: &mut Harness, place: Place) -> RejectReason {
    let before = observe(&h.engine);
    let events = exec(h, place);
    assert_same_state(&before, &observe(&h.engine));
    reject_reason(&events).expect("a reject")
}

#[test]
fn stop_limit_is_held_off_the_book_then_enters_when_the_last_price_reaches_it() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let events = exec(&mut h, stop_limit(3, "sl", Side::Buy, "105", "106", "1"));
    assert_eq!(names(&events), ["accepted", "balance"]);
    let EventKind::Accepted(a) = &events[0].kind else {
        panic!("accepted first")
    };
    assert_eq!(a.order_type, OrderType::StopLimit);
    assert_eq!(a.price, Some(units("106")));
    assert_eq!(
        a.ext.as_ref().and_then(|e| e.stop_price),
        Some(units("105"))
    );
    let id = a.order_id;
    // Reserved like a limit buy at 106: notional plus the largest fee.
    assert_eq!(bal(&h, 3, "USD").1, units("1000000") - units("106.053"));
    let view = open_order(&h, id).expect("open");
    assert_eq!(view.stop_price, Some(units("105")));
    assert!(book(&h).bids.is_empty(), "a stop is not on the book");
    assert_eq!(h.engine.open_order_count(), 1);

    // A print below the stop does nothing.
    let events = print(&mut h, "104", "1");
    assert!(triggered(&events).is_empty());
    // A print at the stop triggers it: it enters as a limit at 106 and
    // rests, after the trade that reached it.
    let events = print(&mut h, "105", "1");
    assert_eq!(triggered(&events), [(id, units("105"), units("105"))]);
    let at = |name: &str| names(&events).iter().position(|n| *n == name);
    assert!(at("trade") < at("triggered"));
    assert_eq!(book(&h).bids, [(units("106"), units("1"))]);
    assert_eq!(open_order(&h, id).and_then(|o| o.stop_price), None);
}

#[test]
fn stop_market_sell_triggers_and_trades_against_the_bids() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let bid = place_ok(&mut h, limit(2, "bid", Side::Buy, "95", "2"));
    let id = place_ok(&mut h, stop_market(3, "sm", Side::Sell, "98", "1"));
    assert_eq!(bal(&h, 3, "BTC").1, units("99"));
    let events = print(&mut h, "98", "1");
    assert_eq!(triggered(&events), [(id, units("98"), units("98"))]);
    let after = &events[names(&events)
        .iter()
        .position(|n| *n == "triggered")
        .unwrap()..];
    assert_eq!(trades(after), [(units("95"), units("1"), bid, id)]);
    assert_eq!(open_order(&h, id), None);
}

#[test]
fn sell_stops_trigger_when_the_price_falls_and_buys_when_it_rises() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let sell = place_ok(&mut h, stop_limit(3, "s", Side::Sell, "99", "90", "1"));
    let buy = place_ok(&mut h, stop_limit(3, "b", Side::Buy, "101", "110", "1"));
    assert_eq!(
        triggered(&print(&mut h, "101", "1")),
        [(buy, units("101"), units("101"))]
    );
    // Out of the way of the next print.
    h.run_checked(cancel_client(3, "b"));
    assert_eq!(
        triggered(&print(&mut h, "99", "1")),
        [(sell, units("99"), units("99"))]
    );
}

#[test]
fn stops_reached_together_trigger_by_stop_price_then_order_id() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let b102 = place_ok(&mut h, stop_limit(3, "a", Side::Buy, "102", "90", "1"));
    let b101a = place_ok(&mut h, stop_limit(3, "b", Side::Buy, "101", "90", "1"));
    let b101b = place_ok(&mut h, stop_limit(3, "c", Side::Buy, "101", "90", "1"));
    let events = print(&mut h, "103", "1");
    let order: Vec<OrderId> = triggered(&events).iter().map(|t| t.0).collect();
    assert_eq!(order, [b101a, b101b, b102]);
}

#[test]
fn a_triggered_stop_that_trades_can_trigger_more_in_the_same_command() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    place_ok(&mut h, limit(1, "a1", Side::Sell, "102", "1"));
    place_ok(&mut h, limit(1, "a2", Side::Sell, "104", "1"));
    // The first stop buys at 102, which reaches the second.
    let first = place_ok(&mut h, stop_market_collared_free(3, "x", "101"));
    let second = place_ok(&mut h, stop_limit(3, "y", Side::Buy, "102", "104", "1"));
    let events = print(&mut h, "101", "1");
    let order: Vec<OrderId> = triggered(&events).iter().map(|t| t.0).collect();
    assert_eq!(order, [first, second]);
    assert!(book(&h).asks.is_empty());
}

/// A stop-limit buy at a limit well above the stop, standing in for a
/// stop market buy on an instrument without a collar.
fn stop_market_collared_free(account: u64, id: &str, stop: &str) -> Place {
    stop_limit(account, id, Side::Buy, stop, "102", "1")
}

#[test]
fn stop_market_buy_reserves_at_its_collar_bound_and_trades_no_higher() {
    let mut h = funded_with(collared(1_000, "100"), 3);
    let id = place_ok(&mut h, stop_market(3, "sm", Side::Buy, "100.01", "1"));
    // Protection: the stop plus the 10% collar, 110.011 -> 110.01 ticks.
    let protection = units("110.01");
    let fee = protection / 2_000;
    assert_eq!(
        open_order(&h, id).map(|o| o.reserved),
        Some(protection + fee)
    );
    place_ok(&mut h, limit(1, "near", Side::Sell, "105", "0.5"));
    let events = print(&mut h, "100.01", "1");
    // It bought what the book offered within its protection, the rest
    // expired, and nothing stays reserved.
    assert_eq!(
        expiries(&events).iter().map(|e| e.0).collect::<Vec<_>>(),
        [id]
    );
    assert_eq!(open_order(&h, id), None);
    assert_eq!(bal(&h, 3, "BTC").0, units("100.5"));
    let usd = bal(&h, 3, "USD");
    assert_eq!(usd.0, usd.1);
}

#[test]
fn canceling_a_stop_releases_it_without_touching_the_book() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let before = bal(&h, 3, "USD");
    place_ok(&mut h, stop_limit(3, "sl", Side::Buy, "105", "106", "1"));
    let events = h.run_checked(cancel_client(3, "sl"));
    assert_eq!(names(&events), ["canceled", "balance"]);
    assert_eq!(bal(&h, 3, "USD"), before);
    assert!(triggered(&print(&mut h, "106", "1")).is_empty());
}

#[test]
fn mass_cancel_and_suspension_sweep_stops() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    place_ok(&mut h, stop_limit(3, "a", Side::Buy, "105", "106", "1"));
    place_ok(&mut h, stop_market(3, "b", Side::Sell, "95", "1"));
    let events = h.run_checked(mass_cancel(3, None));
    assert_eq!(cancels(&events).len(), 2);
    place_ok(&mut h, stop_limit(3, "c", Side::Buy, "105", "106", "1"));
    let events = h.run_checked(suspend(3));
    assert_eq!(cancels(&events).len(), 1);
    assert_eq!(h.engine.open_order_count(), 0);
}

#[test]
fn replacing_a_stop_limit_changes_its_limit_and_quantity_and_reservation() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let id = place_ok(&mut h, stop_limit(3, "sl", Side::Buy, "105", "106", "1"));
    let events = h.run_checked(replace(3, "sl", Some("107"), Some("2")));
    assert_eq!(names(&events), ["replaced", "balance"]);
    let o = open_order(&h, id).expect("open");
    assert_eq!(
        (o.price, o.qty, o.stop_price),
        (units("107"), units("2"), Some(units("105")))
    );
    assert!(book(&h).bids.is_empty());
    // A stop market order has no price of its own to replace.
    place_ok(&mut h, stop_market(3, "sm", Side::Sell, "95", "1"));
    let events = h.run_checked(replace(3, "sm", Some("90"), None));
    assert_eq!(reject_reason(&events), Some(RejectReason::PriceNotAllowed));
}

fn replaced_stop(events: &[Event]) -> Option<u64> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Replaced(r) => r.stop_price.map(std::num::NonZeroU64::get),
        _ => None,
    })
}

#[test]
fn replacing_a_stop_price_moves_the_trigger_and_keeps_the_order_id() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let id = place_ok(&mut h, stop_limit(3, "sl", Side::Buy, "105", "106", "1"));
    // A stop-limit reserves for its limit, which does not move.
    let events = h.run_checked(replace_stop(3, "sl", "103"));
    assert_eq!(names(&events), ["replaced"]);
    assert_eq!(replaced_stop(&events), Some(units("103")));
    let o = open_order(&h, id).expect("still open");
    assert_eq!((o.price, o.stop_price), (units("106"), Some(units("103"))));
    // A plain replace of a stop reports the stop price it keeps.
    let events = h.run_checked(replace(3, "sl", None, Some("2")));
    assert_eq!(replaced_stop(&events), Some(units("103")));
    assert!(triggered(&print(&mut h, "102", "1")).is_empty());
    let events = print(&mut h, "103", "1");
    assert_eq!(triggered(&events), [(id, units("103"), units("103"))]);
}

#[test]
fn a_fill_or_kill_stop_waits_for_its_trigger_then_fills_whole_or_expires() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let id = place_ok(
        &mut h,
        fok(stop_limit(3, "k", Side::Buy, "105", "106", "2")),
    );
    assert!(open_order(&h, id).is_some(), "expired before its trigger");
    place_ok(&mut h, limit(1, "ask", Side::Sell, "106", "1"));
    let events = print(&mut h, "105", "1");
    assert_eq!(triggered(&events).len(), 1);
    assert_eq!(
        expiries(&events).iter().map(|e| e.0).collect::<Vec<_>>(),
        [id]
    );
    assert!(trades(&events).iter().all(|t| t.3 != id), "{events:?}");
}

#[test]
fn a_replaced_stop_triggers_in_the_order_of_its_new_stop_price() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let a = place_ok(&mut h, stop_limit(3, "a", Side::Buy, "105", "110", "1"));
    let b = place_ok(&mut h, stop_limit(3, "b", Side::Buy, "104", "110", "1"));
    h.run_checked(replace_stop(3, "a", "103"));
    let events = print(&mut h, "105", "1");
    let order: Vec<OrderId> = triggered(&events).iter().map(|t| t.0).collect();
    assert_eq!(order, [a, b]);
}

#[test]
fn replacing_a_stop_market_buy_moves_its_protection_and_reservation() {
    let mut h = funded_with(collared(1_000, "100"), 3);
    let id = place_ok(&mut h, stop_market(3, "sm", Side::Buy, "100.01", "1"));
    let reserved = |h: &Harness| open_order(h, id).map(|o| o.reserved);
    let events = h.run_checked(replace_stop(3, "sm", "105"));
    assert_eq!(names(&events), ["replaced", "balance"]);
    // Protection: 105 plus the 10% collar, 115.5.
    let protection = units("115.5");
    assert_eq!(reserved(&h), Some(protection + protection / 2_000));
    let events = h.run_checked(replace_stop(3, "sm", "101"));
    assert_eq!(replaced_stop(&events), Some(units("101")));
    let protection = units("111.1");
    assert_eq!(reserved(&h), Some(protection + protection / 2_000));
    // Funds the account no longer has refuse a higher stop.
    let usd = bal(&h, 3, "USD").1;
    h.run_checked(withdraw(3, "USD", &Dec::from_units(usd).to_string()));
    let events = h.run_checked(replace_stop(3, "sm", "102"));
    assert_eq!(
        reject_reason(&events),
        Some(RejectReason::InsufficientFunds)
    );
}

#[test]
fn trailing_sell_stop_follows_the_price_up_and_triggers_on_the_way_down() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let trail = with_ext(
        Place {
            order_type: OrderType::Stop,
            price: None,
            ..limit(3, "t", Side::Sell, "1", "1")
        },
        |e| e.trailing = Some(Trailing::Amount(dec("5"))),
    );
    let events = exec(&mut h, trail);
    let id = order_id(&events).expect("accepted");
    let EventKind::Accepted(a) = &events[0].kind else {
        panic!()
    };
    assert_eq!(
        a.ext.as_ref().map(|e| (e.stop_price, e.trailing)),
        Some((Some(units("95")), Some(TrailingUnits::Amount(units("5")))))
    );
    print(&mut h, "110", "1");
    assert_eq!(
        open_order(&h, id).and_then(|o| o.stop_price),
        Some(units("105"))
    );
    // Falling does not lower it.
    print(&mut h, "106", "1");
    assert_eq!(
        open_order(&h, id).and_then(|o| o.stop_price),
        Some(units("105"))
    );
    let events = print(&mut h, "105", "1");
    assert_eq!(triggered(&events), [(id, units("105"), units("105"))]);
}

#[test]
fn one_cancels_other_stop_trigger_cancels_the_take_profit() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let tp = place_ok(&mut h, limit(3, "tp", Side::Sell, "110", "1"));
    let events = exec(
        &mut h,
        oco(stop_market(3, "sl", Side::Sell, "90", "1"), "tp"),
    );
    let EventKind::Accepted(a) = &events[0].kind else {
        panic!()
    };
    assert_eq!(a.ext.as_ref().and_then(|e| e.oco_with), Some(coid("tp")));
    let sl = a.order_id;
    let events = print(&mut h, "90", "1");
    assert_eq!(triggered(&events).first().map(|t| t.0), Some(sl));
    assert_eq!(
        cancels(&events)
            .iter()
            .map(|c| (c.0, c.1))
            .collect::<Vec<_>>(),
        [(tp, CancelReason::OneCancelsOther)]
    );
}

#[test]
fn one_cancels_other_fill_of_the_take_profit_cancels_the_stop() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    place_ok(&mut h, limit(3, "tp", Side::Sell, "110", "1"));
    let sl = place_ok(
        &mut h,
        oco(stop_market(3, "sl", Side::Sell, "90", "1"), "tp"),
    );
    // Any fill counts, a partial one too.
    let events = exec(&mut h, limit(2, "lift", Side::Buy, "110", "0.5"));
    assert_eq!(
        cancels(&events)
            .iter()
            .map(|c| (c.0, c.1))
            .collect::<Vec<_>>(),
        [(sl, CancelReason::OneCancelsOther)]
    );
    assert_eq!(bal(&h, 3, "BTC").1, units("99"));
}

#[test]
fn one_cancels_other_cancel_by_request_cancels_both() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let tp = place_ok(&mut h, limit(3, "tp", Side::Sell, "110", "1"));
    let sl = place_ok(
        &mut h,
        oco(stop_market(3, "sl", Side::Sell, "90", "1"), "tp"),
    );
    let events = h.run_checked(cancel_client(3, "sl"));
    assert_eq!(
        cancels(&events)
            .iter()
            .map(|c| (c.0, c.1))
            .collect::<Vec<_>>(),
        [
            (sl, CancelReason::Requested),
            (tp, CancelReason::OneCancelsOther)
        ]
    );
}

#[test]
fn a_pair_whose_partner_the_new_orders_own_match_cancels_leaves_no_flag() {
    let mut h = Harness::funded(3);
    let tp = place_ok(&mut h, limit(3, "tp", Side::Sell, "110", "1"));
    // The buy crosses its own partner: self-trade prevention cancels the
    // resting sell before the buy rests, and the pair must end with it.
    let buy = Place {
        stp: SelfTradePrevention::CancelOldest,
        ..oco(limit(3, "b", Side::Buy, "110", "1"), "tp")
    };
    let events = exec(&mut h, buy);
    assert_eq!(
        cancels(&events)
            .iter()
            .map(|c| (c.0, c.1))
            .collect::<Vec<_>>(),
        [(tp, CancelReason::SelfTrade)]
    );
    // The resting buy is alone again, so a new pair with it is accepted.
    place_ok(
        &mut h,
        oco(stop_market(3, "sl", Side::Sell, "90", "1"), "b"),
    );
}

#[test]
fn reject_reasons_of_stops_change_nothing() {
    let mut h = Harness::funded(3);
    refuse_stop_fields_of_the_wrong_shape(&mut h);
    refuse_trailing_stops_without_a_usable_distance(&mut h);
    refuse_stops_against_the_last_price_and_their_pairs(&mut h);
}

/// Before any trade: stop prices missing, misplaced or off the tick.
fn refuse_stop_fields_of_the_wrong_shape(h: &mut Harness) {
    let no_stop = Place {
        order_type: OrderType::StopLimit,
        ..limit(3, "x", Side::Buy, "100", "1")
    };
    assert_eq!(rejected(h, no_stop), RejectReason::StopPriceRequired);
    let on_limit = with_ext(limit(3, "x", Side::Buy, "100", "1"), |e| {
        e.stop_price = Some(dec("100"))
    });
    assert_eq!(rejected(h, on_limit), RejectReason::StopPriceNotAllowed);
    assert_eq!(
        rejected(h, stop_limit(3, "x", Side::Buy, "100.001", "101", "1")),
        RejectReason::StopPriceNotOnTick
    );
    assert_eq!(
        rejected(h, stop_market(3, "x", Side::Buy, "100", "1")),
        RejectReason::StopMarketBuyNeedsCollar
    );
}

/// Trailing stops refused first for want of a last price, then for their
/// distance; leaves a last price of 100 behind.
fn refuse_trailing_stops_without_a_usable_distance(h: &mut Harness) {
    let trailing = |t: Trailing| {
        with_ext(
            Place {
                order_type: OrderType::Stop,
                price: None,
                ..limit(3, "x", Side::Sell, "1", "1")
            },
            |e| e.trailing = Some(t),
        )
    };
    assert_eq!(
        rejected(h, trailing(Trailing::Bps(100))),
        RejectReason::TrailingNeedsLastPrice
    );
    print(h, "100", "1");
    assert_eq!(
        rejected(h, trailing(Trailing::Bps(0))),
        RejectReason::InvalidTrailing
    );
    let both = with_ext(stop_market(3, "x", Side::Sell, "90", "1"), |e| {
        e.trailing = Some(Trailing::Bps(100))
    });
    assert_eq!(rejected(h, both), RejectReason::InvalidTrailing);
}

/// With a last price of 100: stops that would trigger at once, post-only
/// stops, and one-cancels-other partners missing or already paired.
fn refuse_stops_against_the_last_price_and_their_pairs(h: &mut Harness) {
    assert_eq!(
        rejected(h, stop_limit(3, "x", Side::Buy, "100", "101", "1")),
        RejectReason::StopWouldTriggerImmediately
    );
    assert_eq!(
        rejected(h, stop_market(3, "x", Side::Sell, "100.5", "1")),
        RejectReason::StopWouldTriggerImmediately
    );
    assert_eq!(
        rejected(
            h,
            post_only(stop_limit(3, "x", Side::Buy, "105", "101", "1"))
        ),
        RejectReason::PostOnlyNotAllowed
    );
    assert_eq!(
        rejected(h, oco(stop_market(3, "x", Side::Sell, "90", "1"), "nope")),
        RejectReason::OcoOrderNotFound
    );
    place_ok(h, limit(3, "tp", Side::Sell, "110", "1"));
    place_ok(h, oco(stop_market(3, "sl", Side::Sell, "90", "1"), "tp"));
    assert_eq!(
        rejected(h, oco(stop_market(3, "x", Side::Sell, "80", "1"), "tp")),
        RejectReason::OcoAlreadyLinked
    );
}

#[test]
fn too_many_trailing_stops_on_one_instrument_is_refused() {
    use exchange_types::limits::MAX_TRAILING_STOPS_PER_INSTRUMENT;
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    let trailing = |id: &str| {
        with_ext(
            Place {
                order_type: OrderType::Stop,
                price: None,
                ..limit(3, id, Side::Sell, "1", "0.0001")
            },
            |e| e.trailing = Some(Trailing::Bps(100)),
        )
    };
    for n in 0..MAX_TRAILING_STOPS_PER_INSTRUMENT {
        let events = h.place(trailing(&format!("t{n}")));
        assert_eq!(reject_reason(&events), None);
    }
    assert_eq!(
        reject_reason(&h.place(trailing("last"))),
        Some(RejectReason::TooManyTrailingStops)
    );
    assert_eq!(h.engine.audit(), Ok(()));
}

#[test]
fn snapshot_with_untriggered_stops_and_pairs_restores_to_the_same_future() {
    let mut h = Harness::funded(3);
    print(&mut h, "100", "1");
    place_ok(&mut h, limit(3, "tp", Side::Sell, "110", "1"));
    place_ok(
        &mut h,
        oco(stop_market(3, "sl", Side::Sell, "90", "1"), "tp"),
    );
    place_ok(&mut h, stop_limit(3, "b", Side::Buy, "105", "106", "1"));
    let trail = with_ext(
        Place {
            order_type: OrderType::Stop,
            price: None,
            ..limit(3, "t", Side::Sell, "1", "1")
        },
        |e| e.trailing = Some(Trailing::Bps(300)),
    );
    place_ok(&mut h, trail);
    let restored = Engine::restore(&h.engine.snapshot()).expect("restores");
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    let mut twin = Harness {
        engine: restored,
        ts: h.ts,
    };
    for (price, qty) in [("106", "1"), ("96", "1"), ("90", "1")] {
        for (account, side) in [(1, Side::Sell), (2, Side::Buy)] {
            let p = limit(account, &format!("p{}", h.ts), side, price, qty);
            assert_eq!(h.place(p.clone()), twin.place(p));
        }
    }
    assert_eq!(h.engine.state_hash(), twin.engine.state_hash());
    assert_eq!(h.engine.audit(), Ok(()));
}

/// Turns some of a random stream's orders into stops, stop-limits,
/// if-touched orders and pairs, by a rule on each order's client id so a shrunk stream keeps the
/// same shape.
fn with_stops(commands: Vec<Command>) -> Vec<Command> {
    let mut last_coid: BTreeMap<u64, ClientOrderId> = BTreeMap::new();
    commands
        .into_iter()
        .map(|command| {
            let Command::Place(place) = command else {
                return command;
            };
            let key = place
                .client_order_id
                .as_bytes()
                .iter()
                .map(|&b| u32::from(b))
                .sum::<u32>();
            let earlier = last_coid.insert(place.account, place.client_order_id);
            let place = match (key % 8, place.order_type, place.price) {
                (0, OrderType::Limit, Some(price)) => with_ext(
                    Place {
                        order_type: OrderType::StopLimit,
                        ..place
                    },
                    |e| e.stop_price = Some(price),
                ),
                (1, OrderType::Limit, Some(price)) => with_ext(
                    Place {
                        order_type: OrderType::Stop,
                        price: None,
                        ..place
                    },
                    |e| e.stop_price = Some(price),
                ),
                (2, _, _) => with_ext(
                    Place {
                        order_type: OrderType::Stop,
                        price: None,
                        ..place
                    },
                    |e| e.trailing = Some(Trailing::Bps(50 + key % 300)),
                ),
                (3, OrderType::Limit, Some(price)) => with_ext(
                    Place {
                        order_type: OrderType::LimitIfTouched,
                        ..place
                    },
                    |e| e.stop_price = Some(price),
                ),
                (4, OrderType::Limit | OrderType::Market, _) => {
                    let stop = place.price.unwrap_or(dec("100"));
                    with_ext(
                        Place {
                            order_type: OrderType::MarketIfTouched,
                            price: None,
                            ..place
                        },
                        |e| e.stop_price = Some(stop),
                    )
                }
                _ => place,
            };
            let place = match earlier {
                Some(other) if key % 5 == 3 => with_ext(place, |e| e.oco_with = Some(other)),
                _ => place,
            };
            Command::Place(place)
        })
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest_config(48))]

    /// With stops in the stream, after every command: reservations are the
    /// sum of what open orders (stops included) hold, no book is crossed,
    /// every stop is filed where its price says (the engine's audit); and a
    /// snapshot taken mid-stream continues with the same events and hash.
    #[test]
    fn stops_keep_the_invariants_and_survive_a_snapshot(
        commands in command_stream(Profile::Scarce),
        cut in proptest::prelude::any::<proptest::sample::Index>(),
    ) {
        let commands = with_stops(commands);
        let mut engine = Engine::new();
        let at = cut.index(commands.len());
        let mut twin = None;
        for (index, command) in commands.iter().enumerate() {
            if index == at {
                twin = Some(Engine::restore(&engine.snapshot()).expect("restores"));
            }
            let stamped = Stamped { ts: index as u64 + 1, command: command.clone() };
            let mut out = Vec::new();
            engine.apply(&stamped, &mut out);
            if let Err(violation) = engine.audit() {
                return Err(proptest::test_runner::TestCaseError::fail(format!(
                    "after {}: {violation}", describe(command)
                )));
            }
            if let Some(twin) = twin.as_mut() {
                let mut again = Vec::new();
                twin.apply(&stamped, &mut again);
                proptest::prop_assert_eq!(&out, &again);
            }
        }
        let twin = twin.expect("cut within the stream");
        proptest::prop_assert_eq!(twin.state_hash(), engine.state_hash());
    }
}
