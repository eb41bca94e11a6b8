//! Trading phases: call phases collect orders without matching, the
//! uncross executes them at one price, the indicative price follows the
//! book during a call, and session times in force end with their phase.

use exchange_core::Engine;
use exchange_types::event::{AuctionKind, Indicative};
use exchange_types::*;

use exchange_testkit::engine::*;

fn indicatives(events: &[Event]) -> Vec<Indicative> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Indicative(i) => Some(i.clone()),
            _ => None,
        })
        .collect()
}

/// Pre-open with the worked example of docs/market-model.md: bids 2@101
/// and 1@100, asks 1@99, 2@100 and 1@102. Returns the order ids in
/// arrival order.
fn pre_open_book(h: &mut Harness) -> [OrderId; 5] {
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    [
        place_ok(h, limit(1, "b1", Side::Buy, "101", "2")),
        place_ok(h, limit(2, "s1", Side::Sell, "99", "1")),
        place_ok(h, limit(1, "b2", Side::Buy, "100", "1")),
        place_ok(h, limit(2, "s2", Side::Sell, "100", "2")),
        place_ok(h, limit(2, "s3", Side::Sell, "102", "1")),
    ]
}

#[test]
fn a_call_collects_crossing_orders_without_trading() {
    let mut h = Harness::funded(2);
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    place_ok(&mut h, limit(1, "b1", Side::Buy, "101", "2"));
    let events = h.run_checked(cmd(limit(2, "s1", Side::Sell, "99", "1")));
    assert!(trades(&events).is_empty());
    let b = book(&h);
    assert_eq!(b.bids[0].0, units("101"));
    assert_eq!(b.asks[0].0, units("99"));
    // 101 and 99 both execute 1 with a buy surplus of 1: buy pressure
    // takes the highest.
    assert_eq!(
        indicatives(&events),
        [Indicative {
            symbol: sym("BTC-USD"),
            price: Some(units("101")),
            volume: units("1"),
            imbalance_side: Some(Side::Buy),
            imbalance_qty: units("1"),
        }]
    );
    assert_eq!(
        h.engine.indicative(&sym("BTC-USD")),
        indicatives(&events).pop()
    );
    // An order that changes nothing in the crossing region publishes
    // nothing.
    let quiet = h.run_checked(cmd(limit(1, "far", Side::Buy, "50", "1")));
    assert!(indicatives(&quiet).is_empty());
    assert_eq!(h.engine.instruments()[0].phase, Phase::PreOpen);
}

#[test]
fn the_opening_auction_executes_at_one_price_in_price_time_order() {
    let mut h = Harness::funded(2);
    let [b1, s1, b2, s2, s3] = pre_open_book(&mut h);
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    assert_eq!(phases(&events), [Phase::OpeningAuction, Phase::Continuous]);
    assert_eq!(
        auctions(&events),
        [(AuctionKind::Open, units("100"), units("3"))]
    );
    // The later order of each pair is the taker.
    let p = units("100");
    let q = units("1");
    assert_eq!(
        trades(&events),
        [(p, q, b1, s1), (p, q, b1, s2), (p, q, b2, s2)]
    );
    assert_eq!(open_ids(&h), [s3]);
    assert_eq!(h.engine.indicative(&sym("BTC-USD")), None);
    assert_eq!(
        h.engine.instruments()[0].reference_price,
        Some(units("100"))
    );
    // Continuous trading resumes: a crossing order trades at once.
    let events = exec(&mut h, limit(1, "t", Side::Buy, "102", "1"));
    assert_eq!(trades(&events).len(), 1);
}

#[test]
fn the_scheduler_may_send_continuous_to_open() {
    let mut h = Harness::funded(2);
    pre_open_book(&mut h);
    let events = h.run_checked(set_phase(Phase::Continuous));
    assert_eq!(auctions(&events).len(), 1);
    assert_eq!(trades(&events).len(), 3);
}

#[test]
fn a_remainder_rests_for_continuous_trading_and_at_open_expires() {
    let mut h = Harness::funded(2);
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    let keep = place_ok(&mut h, limit(1, "b1", Side::Buy, "100", "3"));
    let at_open = place_ok(
        &mut h,
        with_tif(
            limit(1, "b2", Side::Buy, "100", "2"),
            TimeInForce::AtOpen,
            None,
        ),
    );
    let s = place_ok(&mut h, limit(2, "s1", Side::Sell, "100", "4"));
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    // b1 fills 3 first (time priority), b2 gets 1, and its last lot
    // expires with the auction.
    assert_eq!(
        trades(&events),
        [
            (units("100"), units("3"), keep, s),
            (units("100"), units("1"), at_open, s)
        ]
    );
    assert_eq!(expired_ids(&events), [at_open]);
    assert!(open_ids(&h).is_empty());
}

#[test]
fn nothing_crossing_opens_without_an_auction() {
    let mut h = Harness::funded(2);
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    place_ok(&mut h, limit(1, "b", Side::Buy, "99", "1"));
    place_ok(&mut h, limit(2, "s", Side::Sell, "100", "1"));
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    assert!(auctions(&events).is_empty());
    assert_eq!(open_ids(&h).len(), 2);
}

#[test]
fn the_close_runs_an_auction_and_expires_day_and_at_close_orders() {
    let mut h = Harness::funded(2);
    let day = place_ok(
        &mut h,
        with_tif(limit(1, "d", Side::Buy, "90", "1"), TimeInForce::Day, None),
    );
    let gtc = place_ok(&mut h, limit(1, "g", Side::Buy, "91", "1"));
    h.run_checked(set_phase(Phase::ClosingCall));
    let at_close = place_ok(
        &mut h,
        with_tif(
            limit(1, "c", Side::Buy, "100", "2"),
            TimeInForce::AtClose,
            None,
        ),
    );
    let s = place_ok(&mut h, limit(2, "s", Side::Sell, "100", "1"));
    let events = h.run_checked(set_phase(Phase::ClosingAuction));
    assert_eq!(phases(&events), [Phase::ClosingAuction, Phase::PostClose]);
    assert_eq!(
        auctions(&events),
        [(AuctionKind::Close, units("100"), units("1"))]
    );
    assert_eq!(trades(&events), [(units("100"), units("1"), at_close, s)]);
    assert_eq!(expired_ids(&events), [at_close, day]);
    assert_eq!(open_ids(&h), [gtc]);
}

#[test]
fn good_till_date_expires_when_log_time_passes_it() {
    let mut h = Harness::funded(1);
    let expire_at = h.ts + 3;
    let events = h.run_checked(cmd(with_tif(
        limit(1, "g", Side::Buy, "100", "1"),
        TimeInForce::Gtd,
        Some(expire_at),
    )));
    let id = order_id(&events).expect("accepted");
    assert!(events.iter().any(|e| matches!(
        &e.kind,
        EventKind::Accepted(a) if a.ext.as_ref().and_then(|x| x.expire_ts) == Some(expire_at)
    )));
    // ts + 2: still open.
    let events = h.run_checked(Command::Tick);
    assert!(events.is_empty());
    assert_eq!(open_ids(&h), [id]);
    // ts + 3: a tick carries time to the expiry.
    let events = h.run_checked(Command::Tick);
    assert_eq!(expired_ids(&events), [id]);
    assert!(open_ids(&h).is_empty());
}

#[test]
fn a_canceled_good_till_date_order_does_not_expire_again() {
    let mut h = Harness::funded(1);
    let expire_at = h.ts + 3;
    let id = place_ok(
        &mut h,
        with_tif(
            limit(1, "g", Side::Buy, "100", "1"),
            TimeInForce::Gtd,
            Some(expire_at),
        ),
    );
    h.run_checked(cancel_id(1, id));
    let events = h.run_checked(Command::Tick);
    let events2 = h.run_checked(Command::Tick);
    assert!(expired_ids(&events).is_empty() && expired_ids(&events2).is_empty());
}

#[test]
fn halt_in_a_call_keeps_the_crossed_book_and_resume_reopens_by_auction() {
    let mut h = Harness::funded(2);
    pre_open_book(&mut h);
    let events = h.run_checked(halt("BTC-USD"));
    assert_eq!(phases(&events), [Phase::Halted]);
    assert!(trades(&events).is_empty());
    let events = h.run_checked(resume("BTC-USD"));
    assert_eq!(
        auctions(&events),
        [(AuctionKind::Reopen, units("100"), units("3"))]
    );
    assert_eq!(phases(&events), [Phase::Continuous]);
}

#[test]
fn volatility_auction_set_by_the_operator_uncrosses_into_continuous() {
    let mut h = Harness::funded(2);
    h.run_checked(set_phase(Phase::VolatilityAuction));
    place_ok(&mut h, limit(1, "b", Side::Buy, "105", "1"));
    place_ok(&mut h, limit(2, "s", Side::Sell, "95", "1"));
    let events = h.run_checked(set_phase(Phase::Continuous));
    // A balanced book with no reference: the lowest candidate.
    assert_eq!(
        auctions(&events),
        [(AuctionKind::Volatility, units("95"), units("1"))]
    );
}

#[test]
fn snapshot_in_the_middle_of_a_call_continues_exactly() {
    let mut h = Harness::funded(2);
    pre_open_book(&mut h);
    let expire_at = h.ts + 5;
    place_ok(
        &mut h,
        with_tif(
            limit(1, "g", Side::Buy, "98", "1"),
            TimeInForce::Gtd,
            Some(expire_at),
        ),
    );
    let bytes = h.engine.snapshot();
    let mut restored = Engine::restore(&bytes).expect("restores");
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    let rest = [
        cmd(limit(1, "x", Side::Buy, "102", "1")),
        Command::Tick,
        Command::Tick,
        Command::Tick,
        set_phase(Phase::OpeningAuction),
        cmd(limit(1, "y", Side::Buy, "103", "1")),
    ];
    for command in rest {
        h.ts += 1;
        let stamped = Stamped { ts: h.ts, command };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        h.engine.apply(&stamped, &mut a);
        restored.apply(&stamped, &mut b);
        assert_eq!(a, b);
        assert_eq!(h.engine.state_hash(), restored.state_hash());
        h.engine.audit().expect("consistent");
    }
}

#[test]
fn continuous_only_state_keeps_its_snapshot_bytes() {
    // No phase ever set and no expiry: the snapshot has no phase section,
    // so restoring it gives the same bytes.
    let mut h = Harness::funded(2);
    place_ok(&mut h, limit(1, "b", Side::Buy, "99", "1"));
    let bytes = h.engine.snapshot();
    let restored = Engine::restore(&bytes).expect("restores");
    assert_eq!(restored.snapshot(), bytes);
    assert_eq!(restored.instruments()[0].phase, Phase::Continuous);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(proptest_config(64))]

        /// Any call book uncrosses at one price into an uncrossed book,
        /// executing exactly the announced volume, with every invariant
        /// holding; and a restored copy taken mid-call does the same.
        #[test]
        fn any_call_book_uncrosses_at_one_price(
            orders in prop::collection::vec((any::<bool>(), 95u64..106, 1u64..5, 1u64..4), 1..40),
        ) {
            let mut h = Harness::funded(3);
            h.run_checked(set_phase(Phase::Closed));
            h.run_checked(set_phase(Phase::PreOpen));
            for (n, (buy, price, qty, account)) in orders.iter().enumerate() {
                let side = if *buy { Side::Buy } else { Side::Sell };
                h.run_checked(cmd(limit(
                    *account,
                    &format!("o{n}"),
                    side,
                    &price.to_string(),
                    &qty.to_string(),
                )));
            }
            let indicative = h.engine.indicative(&sym("BTC-USD")).expect("in a call");
            let mut restored = Engine::restore(&h.engine.snapshot()).expect("restores");
            let events = h.run_checked(set_phase(Phase::OpeningAuction));
            let mut copy = Vec::new();
            let opening = Stamped { ts: h.ts, command: set_phase(Phase::OpeningAuction) };
            restored.apply(&opening, &mut copy);
            prop_assert_eq!(&events, &copy);
            prop_assert_eq!(h.engine.state_hash(), restored.state_hash());
            let trades = trades(&events);
            let auction = auctions(&events);
            match indicative.price {
                None => prop_assert!(auction.is_empty() && trades.is_empty()),
                Some(price) => {
                    prop_assert_eq!(&auction, &vec![(AuctionKind::Open, price, indicative.volume)]);
                    prop_assert!(trades.iter().all(|t| t.0 == price));
                    prop_assert_eq!(trades.iter().map(|t| t.1).sum::<u64>(), indicative.volume);
                }
            }
            let b = book(&h);
            if let (Some(bid), Some(ask)) = (b.bids.first(), b.asks.first()) {
                prop_assert!(bid.0 < ask.0);
            }
        }

        /// The same with market orders among the limit orders (collared
        /// 90-110): the auction executes the announced volume, market
        /// orders before any limit order of their side, and what is left
        /// of them rests at the last price.
        #[test]
        fn a_call_book_with_market_orders_uncrosses_at_one_price(
            orders in prop::collection::vec(
                (
                    any::<bool>(),
                    prop_oneof![3 => (95u64..106).prop_map(Some), 1 => Just(None)],
                    1u64..5,
                    1u64..4,
                ),
                1..40,
            ),
        ) {
            let mut h = funded_with(collared(1000, "100"), 3);
            h.run_checked(set_phase(Phase::Closed));
            h.run_checked(set_phase(Phase::PreOpen));
            let mut markets = Vec::new();
            for (n, (buy, price, qty, account)) in orders.iter().enumerate() {
                let side = if *buy { Side::Buy } else { Side::Sell };
                let (id, qty) = (format!("o{n}"), qty.to_string());
                let place = match price {
                    Some(p) => limit(*account, &id, side, &p.to_string(), &qty),
                    None => with_tif(market(*account, &id, side, &qty), TimeInForce::Gtc, None),
                };
                let events = h.run_checked(cmd(place));
                prop_assert_eq!(reject_reason(&events), None);
                if price.is_none() {
                    markets.push(order_id(&events).expect("accepted"));
                }
            }
            let indicative = h.engine.indicative(&sym("BTC-USD")).expect("in a call");
            let mut restored = Engine::restore(&h.engine.snapshot()).expect("restores");
            let events = h.run_checked(set_phase(Phase::OpeningAuction));
            let mut copy = Vec::new();
            let opening = Stamped { ts: h.ts, command: set_phase(Phase::OpeningAuction) };
            restored.apply(&opening, &mut copy);
            prop_assert_eq!(&events, &copy);
            prop_assert_eq!(h.engine.state_hash(), restored.state_hash());
            // The auction's trades come before the phase settles in
            // continuous; carried market orders may trade after it.
            let settled = events
                .iter()
                .position(|e| matches!(&e.kind,
                    EventKind::Phase(p) if p.phase == Phase::Continuous))
                .expect("settles in continuous");
            let trades = trades(&events[..settled]);
            match indicative.price {
                None => prop_assert!(trades.is_empty()),
                Some(price) => {
                    prop_assert!(trades.iter().all(|t| t.0 == price));
                    prop_assert_eq!(trades.iter().map(|t| t.1).sum::<u64>(), indicative.volume);
                }
            }
            // Market orders trade first: once a trade has no market order
            // on a side, no later trade has one on that side.
            let is_market = |id: &OrderId| markets.contains(id);
            let mut sides_done = [false, false];
            for e in &events {
                if let EventKind::Trade(t) = &e.kind {
                    let (buyer, seller) = match t.aggressor_side {
                        Side::Buy => (t.taker_order_id, t.maker_order_id),
                        Side::Sell => (t.maker_order_id, t.taker_order_id),
                    };
                    for (done, id) in sides_done.iter_mut().zip([buyer, seller]) {
                        prop_assert!(!(*done && is_market(&id)));
                        *done |= !is_market(&id);
                    }
                }
            }
            // What is left of a market order rests at the last price,
            // within its bound (110 for a buy, 90 for a sell).
            let last = h.engine.instruments()[0].reference_price.expect("a reference");
            for o in h.engine.open_orders().iter().filter(|o| markets.contains(&o.order_id)) {
                let at = match o.side {
                    Side::Buy => last.min(units("110")),
                    Side::Sell => last.max(units("90")),
                };
                prop_assert_eq!(o.price, at);
            }
            let b = book(&h);
            if let (Some(bid), Some(ask)) = (b.bids.first(), b.asks.first()) {
                prop_assert!(bid.0 < ask.0);
            }
        }
    }
}

/// A market order for a call: good till canceled, as immediate ones are
/// refused there.
fn mkt(account: u64, id: &str, side: Side, qty: &str) -> Place {
    with_tif(market(account, id, side, qty), TimeInForce::Gtc, None)
}

/// A pre-open call on BTC-USD collared 10% around 100 (bounds 90 and 110),
/// with four funded accounts.
fn collared_pre_open() -> Harness {
    let mut h = funded_with(collared(1000, "100"), 4);
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    h
}

#[test]
fn market_orders_in_a_call_execute_first_at_the_uncrossing_price() {
    let mut h = collared_pre_open();
    let b1 = place_ok(&mut h, limit(1, "b1", Side::Buy, "101", "2"));
    let s1 = place_ok(&mut h, limit(2, "s1", Side::Sell, "99", "1"));
    let s2 = place_ok(&mut h, limit(2, "s2", Side::Sell, "100", "2"));
    let book_before = book(&h);
    let buy = h.run_checked(cmd(mkt(3, "mb", Side::Buy, "1")));
    let mb = order_id(&buy).expect("accepted");
    // Off the book: no level moves, but the indicative counts it.
    assert!(book_updates(&buy).is_empty());
    assert_eq!(indicatives(&buy).pop().map(|i| i.volume), Some(units("3")));
    let sell = h.run_checked(cmd(mkt(4, "ms", Side::Sell, "1")));
    let ms = order_id(&sell).expect("accepted");
    assert!(book_updates(&sell).is_empty());
    assert_eq!(book(&h), book_before);
    // Open orders: listed, and reserved at the buy's bound (110).
    assert_eq!(open_ids(&h), [b1, s1, s2, mb, ms]);
    let (total, available) = h.engine.balance(3, &asset("USD")).expect("funded");
    assert!(total - available >= units("110"));
    // Demand 3 at 99, 100 and 101; supply 2 at 99 and 4 from 100: 100
    // and 101 execute 3 with a sell surplus of 1, the lowest wins.
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    assert_eq!(
        auctions(&events),
        [(AuctionKind::Open, units("100"), units("3"))]
    );
    // The market orders trade first, with each other, though a limit
    // sell at 99 was better than every other; then the book in
    // price-time priority.
    let (p, q) = (units("100"), units("1"));
    assert_eq!(
        trades(&events),
        [(p, q, mb, ms), (p, q, b1, s1), (p, q, b1, s2)]
    );
    assert_eq!(open_ids(&h), [s2]);
    // The buy paid 100 and holds nothing more.
    let (total, available) = h.engine.balance(3, &asset("USD")).expect("funded");
    assert_eq!(total, available);
    h.engine.audit().expect("consistent");
}

#[test]
fn a_market_buy_never_executes_above_its_bound() {
    let mut h = collared_pre_open();
    let b = place_ok(&mut h, limit(1, "b", Side::Buy, "108", "1"));
    let s = place_ok(&mut h, limit(2, "s", Side::Sell, "107", "2"));
    // A tighter collar: 1% around 100 bounds new market buys at 101,
    // below the crossing limit orders.
    let events = h.run_checked(set_rules(SetInstrumentRules {
        collar_bps: Some(100),
        ..rules("BTC-USD")
    }));
    assert_eq!(reject_reason(&events), None);
    let m = place_ok(&mut h, mkt(3, "m", Side::Buy, "1"));
    // At 107 and 108 the market buy does not count: 1 executes at 107.
    assert_eq!(
        h.engine
            .indicative(&sym("BTC-USD"))
            .map(|i| (i.price, i.volume)),
        Some((Some(units("107")), units("1")))
    );
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    assert_eq!(
        auctions(&events),
        [(AuctionKind::Open, units("107"), units("1"))]
    );
    assert_eq!(trades(&events), [(units("107"), units("1"), b, s)]);
    // Unexecuted, it goes on into continuous trading, where nothing is
    // offered within its bound: it rests at its bound, below the last
    // price, holding what a limit buy there holds.
    assert!(expired_ids(&events).is_empty());
    assert_eq!(book(&h).bids, [(units("101"), units("1"))]);
    assert_eq!(open_ids(&h), [s, m]);
    let (total, available) = h.engine.balance(3, &asset("USD")).expect("funded");
    assert_eq!(total - available, units("101.0505"));
    assert_eq!(total, units("1000000"));
}

#[test]
fn a_market_remainder_rests_after_the_auction_and_expires_after_the_close() {
    let mut h = collared_pre_open();
    let s = place_ok(&mut h, limit(2, "s", Side::Sell, "100", "1"));
    let m = place_ok(&mut h, mkt(3, "m", Side::Buy, "3"));
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    assert_eq!(trades(&events), [(units("100"), units("1"), s, m)]);
    // Nothing is left to buy: the remainder rests at the last price.
    assert!(expired_ids(&events).is_empty());
    assert_eq!(book(&h).bids, [(units("100"), units("2"))]);
    assert_eq!(open_ids(&h), [m]);
    // Paid 100 and the taker fee (5 bps), holds 200 and the fee.
    let (total, available) = h.engine.balance(3, &asset("USD")).expect("funded");
    assert_eq!(total, units("1000000") - units("100.05"));
    assert_eq!(total - available, units("200.1"));
    h.run_checked(cancel_client(3, "m"));
    // A market sell with nothing to meet expires whole after the closing
    // auction, and a canceled one is gone before it.
    h.run_checked(set_phase(Phase::ClosingCall));
    let lone = place_ok(&mut h, mkt(4, "lone", Side::Sell, "1"));
    let gone = place_ok(&mut h, mkt(4, "gone", Side::Sell, "1"));
    let events = h.run_checked(cancel_client(4, "gone"));
    assert_eq!(reject_reason(&events), None);
    assert!(!open_ids(&h).contains(&gone));
    let events = h.run_checked(set_phase(Phase::ClosingAuction));
    assert!(auctions(&events).is_empty());
    assert_eq!(expired_ids(&events), [lone]);
    let (total, available) = h.engine.balance(4, &asset("BTC")).expect("funded");
    assert_eq!((total, available), (units("100"), units("100")));
}

#[test]
fn a_good_till_date_market_order_expires_in_the_call_at_its_time() {
    let mut h = collared_pre_open();
    let at = h.ts + 3;
    let m = place_ok(
        &mut h,
        with_tif(mkt(3, "m", Side::Buy, "1"), TimeInForce::Gtd, Some(at)),
    );
    h.engine.audit().expect("consistent");
    let snapshot = Engine::restore(&h.engine.snapshot()).expect("restores");
    assert_eq!(snapshot.state_hash(), h.engine.state_hash());
    h.run_checked(Command::Tick);
    let events = h.run_checked(Command::Tick);
    assert_eq!(expired_ids(&events), [m]);
    assert!(book_updates(&events).is_empty());
    assert!(open_ids(&h).is_empty());
    let (total, available) = h.engine.balance(3, &asset("USD")).expect("funded");
    assert_eq!(total, available);
}

#[test]
fn a_waiting_market_order_changes_quantity_but_takes_no_price() {
    let mut h = collared_pre_open();
    place_ok(&mut h, mkt(3, "m", Side::Buy, "1"));
    let events = h.run_checked(replace(3, "m", Some("100"), None));
    assert_eq!(reject_reason(&events), Some(RejectReason::PriceNotAllowed));
    let events = h.run_checked(replace(3, "m", None, Some("2")));
    assert_eq!(reject_reason(&events), None);
    assert!(book_updates(&events).is_empty());
    // Reserved at the bound (110) for both lots.
    let (total, available) = h.engine.balance(3, &asset("USD")).expect("funded");
    assert!(total - available >= units("220"));
    let s = place_ok(&mut h, limit(2, "s", Side::Sell, "100", "3"));
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    assert_eq!(open_ids(&h), [s]);
    assert_eq!(trades(&events).iter().map(|t| t.1).sum::<u64>(), units("2"));
}

#[test]
fn mass_cancel_sweeps_market_orders_waiting_in_a_call() {
    let mut h = collared_pre_open();
    let m = place_ok(&mut h, mkt(3, "m", Side::Buy, "1"));
    place_ok(&mut h, limit(3, "l", Side::Buy, "95", "1"));
    let events = h.run_checked(mass_cancel(3, None));
    let canceled: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Canceled(c) => Some(c.order_id),
            _ => None,
        })
        .collect();
    assert!(canceled.contains(&m));
    assert!(open_ids(&h).is_empty());
    let (total, available) = h.engine.balance(3, &asset("USD")).expect("funded");
    assert_eq!(total, available);
}

#[test]
fn snapshot_in_a_call_with_market_orders_continues_exactly() {
    let mut h = collared_pre_open();
    place_ok(&mut h, limit(1, "b1", Side::Buy, "101", "2"));
    place_ok(&mut h, limit(2, "s1", Side::Sell, "99", "1"));
    place_ok(&mut h, mkt(3, "mb", Side::Buy, "2"));
    place_ok(&mut h, mkt(4, "ms", Side::Sell, "1"));
    let bytes = h.engine.snapshot();
    let mut restored = Engine::restore(&bytes).expect("restores");
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    assert_eq!(restored.open_orders(), h.engine.open_orders());
    let rest = [
        cmd(mkt(3, "mb2", Side::Buy, "1")),
        cancel_client(3, "mb2"),
        cmd(limit(2, "s2", Side::Sell, "100", "3")),
        set_phase(Phase::OpeningAuction),
        cmd(limit(1, "y", Side::Buy, "103", "1")),
    ];
    for command in rest {
        h.ts += 1;
        let stamped = Stamped { ts: h.ts, command };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        h.engine.apply(&stamped, &mut a);
        restored.apply(&stamped, &mut b);
        assert_eq!(a, b);
        assert_eq!(h.engine.state_hash(), restored.state_hash());
        h.engine.audit().expect("consistent");
    }
    // The market orders traded in the auction.
    assert!(h
        .engine
        .open_orders()
        .iter()
        .all(|o| o.client_order_id != coid("mb")));
}
