//! Hidden orders: never shown, displayed orders first at a price, hidden
//! ones by time after them, a better price first whatever it shows; the
//! instrument's minimum value; auctions; snapshots.

use exchange_core::Engine;
use exchange_testkit::engine::*;
use exchange_types::*;

/// BTC-USD taking hidden orders worth 1,000 USD or more; accounts 1..=n.
fn market(accounts: u64) -> Harness {
    funded_with(with_hidden_minimum("1000"), accounts)
}

#[test]
fn displayed_orders_trade_before_hidden_ones_at_the_same_price() {
    let mut h = market(4);
    let hidden_first = place_ok(&mut h, hidden(limit(1, "h", Side::Sell, "100", "10")));
    let shown = place_ok(&mut h, limit(2, "s", Side::Sell, "100", "5"));
    let hidden_later = place_ok(&mut h, hidden(limit(3, "h2", Side::Sell, "100", "10")));
    let events = exec(&mut h, limit(4, "t", Side::Buy, "100", "18"));
    let taker = order_id(&events).unwrap();
    assert_eq!(
        trades(&events),
        [
            (units("100"), units("5"), shown, taker),
            (units("100"), units("10"), hidden_first, taker),
            (units("100"), units("3"), hidden_later, taker),
        ]
    );
    // Only the displayed level was ever published: it is gone now.
    assert_eq!(book_updates(&events), [(Side::Sell, units("100"), 0)]);
    assert!(book(&h).asks.is_empty());
    let rest = open_order(&h, hidden_later).expect("the later hidden order rests");
    assert_eq!((rest.filled_qty, rest.hidden), (units("3"), true));
}

#[test]
fn a_hidden_order_at_a_better_price_trades_before_a_displayed_one() {
    let mut h = market(3);
    let shown = place_ok(&mut h, limit(1, "s", Side::Sell, "100", "5"));
    let better = place_ok(&mut h, hidden(limit(2, "h", Side::Sell, "99", "11")));
    // Market data still shows the displayed ask as the best.
    assert_eq!(book(&h).asks, [(units("100"), units("5"))]);
    let events = exec(&mut h, limit(3, "t", Side::Buy, "100", "12"));
    let taker = order_id(&events).unwrap();
    assert_eq!(
        trades(&events),
        [
            (units("99"), units("11"), better, taker),
            (units("100"), units("1"), shown, taker),
        ]
    );
    assert_eq!(book(&h).asks, [(units("100"), units("4"))]);
}

#[test]
fn an_icebergs_reserve_trades_before_hidden_orders_at_its_price() {
    let mut h = market(4);
    let berg = place_ok(&mut h, iceberg(limit(1, "i", Side::Sell, "100", "5"), "1"));
    let dark = place_ok(&mut h, hidden(limit(2, "h", Side::Sell, "100", "10")));
    let shown = place_ok(&mut h, limit(3, "s", Side::Sell, "100", "1"));
    let events = exec(&mut h, limit(4, "t", Side::Buy, "100", "8"));
    let makers: Vec<_> = trades(&events).iter().map(|t| (t.2, t.1)).collect();
    assert_eq!(
        makers,
        [
            (berg, units("1")),
            (shown, units("1")),
            (berg, units("4")),
            (dark, units("2")),
        ]
    );
}

#[test]
fn hidden_orders_never_reach_market_data() {
    let mut h = market(3);
    let placed = exec(&mut h, hidden(limit(1, "h", Side::Buy, "100", "20")));
    assert!(book_updates(&placed).is_empty());
    assert!(book(&h).bids.is_empty());
    place_ok(&mut h, limit(2, "s", Side::Buy, "100", "1"));
    assert_eq!(book(&h).bids, [(units("100"), units("1"))]);
    // A partial fill of the hidden order, and its cancel, publish nothing
    // of it: the displayed bid trades first and is reported gone.
    let sold = exec(&mut h, limit(3, "t", Side::Sell, "100", "3"));
    assert_eq!(book_updates(&sold), [(Side::Buy, units("100"), 0)]);
    let canceled = h.run_checked(cancel_client(1, "h"));
    assert!(book_updates(&canceled).is_empty());
    assert!(book(&h).bids.is_empty());
}

#[test]
fn a_post_only_order_that_would_meet_a_hidden_one_is_refused() {
    let mut h = market(2);
    place_ok(&mut h, hidden(limit(1, "h", Side::Sell, "100", "10")));
    let bid = post_only(limit(2, "p", Side::Buy, "100", "1"));
    assert_rejected(&mut h, cmd(bid), RejectReason::PostOnlyWouldTake);
}

#[test]
fn a_replace_keeps_a_hidden_order_at_its_minimum() {
    let mut h = market(1);
    let id = place_ok(&mut h, hidden(limit(1, "h", Side::Buy, "100", "20")));
    let down = replace_id(1, id, None, Some("9"));
    assert_rejected(&mut h, down, RejectReason::HiddenBelowMinimum);
    let events = h.run_checked(replace_id(1, id, Some("101"), Some("10")));
    assert!(book_updates(&events).is_empty());
    assert_eq!(open_order(&h, id).map(|o| o.hidden), Some(true));
}

#[test]
fn hidden_orders_execute_in_the_auction() {
    let mut h = market(3);
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    let dark = place_ok(&mut h, hidden(limit(1, "h", Side::Buy, "101", "10")));
    let shown = place_ok(&mut h, limit(2, "s", Side::Buy, "101", "2"));
    let ask_events = exec(&mut h, limit(3, "a", Side::Sell, "100", "5"));
    let ask = order_id(&ask_events).unwrap();
    // The published indicative counts the hidden bid: 5 execute, not 2.
    let indicative = ask_events.iter().find_map(|e| match &e.kind {
        EventKind::Indicative(i) => Some((i.price, i.volume)),
        _ => None,
    });
    assert_eq!(indicative, Some((Some(units("101")), units("5"))));
    let events = h.run_checked(set_phase(Phase::Continuous));
    let volume: Vec<_> = trades(&events)
        .iter()
        .map(|t| (t.2.min(t.3), t.1))
        .collect();
    // The displayed bid first, then the hidden one, at one price.
    assert_eq!(volume, [(shown, units("2")), (dark, units("3"))]);
    assert!(trades(&events).iter().all(|t| t.0 == units("101")));
    assert!(book_updates(&events)
        .iter()
        .all(|u| u.1 != units("101") || u.0 == Side::Buy));
    assert_eq!(open_order(&h, ask), None);
    assert_eq!(open_order(&h, dark).map(|o| o.filled_qty), Some(units("3")));
}

#[test]
fn a_snapshot_carries_hidden_orders_and_the_minimum() {
    let mut h = market(2);
    place_ok(&mut h, hidden(limit(1, "h", Side::Buy, "100", "20")));
    place_ok(&mut h, limit(1, "s", Side::Buy, "100", "1"));
    place_ok(&mut h, hidden(limit(2, "a", Side::Sell, "105", "10")));
    let bytes = h.engine.snapshot();
    let restored = Engine::restore(&bytes).expect("restores");
    assert_eq!(restored.snapshot(), bytes);
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    // The restored engine trades the same: displayed first, then hidden.
    let mut twin = Harness {
        engine: restored,
        ts: h.ts,
    };
    let sell = limit(2, "t", Side::Sell, "100", "3");
    assert_eq!(exec(&mut twin, sell.clone()), exec(&mut h, sell));
    let small = hidden(limit(1, "x", Side::Buy, "100", "1"));
    assert_rejected(&mut twin, cmd(small), RejectReason::HiddenBelowMinimum);
}

#[test]
fn the_state_hash_covers_the_flag() {
    let mut shown = market(1);
    let mut dark = market(1);
    place_ok(&mut shown, limit(1, "o", Side::Buy, "100", "20"));
    place_ok(&mut dark, hidden(limit(1, "o", Side::Buy, "100", "20")));
    assert_ne!(shown.engine.state_hash(), dark.engine.state_hash());
}

#[test]
fn new_rules_keep_hidden_orders_hidden_and_delisting_cancels_them() {
    let mut h = market(2);
    let dark = place_ok(&mut h, hidden(limit(1, "h", Side::Buy, "100", "20")));
    place_ok(&mut h, limit(2, "s", Side::Buy, "99", "1"));
    // A coarser tick the price still fits: the books are rebuilt.
    let set = SetInstrumentRules {
        tick_size: Some(dec("0.1")),
        ..rules("BTC-USD")
    };
    let changed = h.run_checked(set_rules(set));
    assert!(book_updates(&changed).iter().all(|u| u.1 != units("100")));
    assert_eq!(book(&h).bids, [(units("99"), units("1"))]);
    assert_eq!(open_order(&h, dark).map(|o| o.hidden), Some(true));
    let sold = exec(&mut h, limit(2, "t", Side::Sell, "100", "1"));
    assert_eq!(trades(&sold)[0].2, dark);
    let delisted = h.run_checked(Command::Delist {
        symbol: sym("BTC-USD"),
    });
    assert!(cancels(&delisted).iter().any(|c| c.0 == dark));
    assert_eq!(open_order(&h, dark), None);
}

/// The operator raises the minimum: a resting hidden order worth less is
/// cancelled (`rules_changed`), as one outside a new size rule is; one
/// worth it stays hidden; new hidden orders meet the new minimum.
#[test]
fn new_rules_may_raise_the_minimum_and_cancel_what_falls_below_it() {
    let mut h = market(2);
    let small = place_ok(&mut h, hidden(limit(1, "small", Side::Buy, "100", "20")));
    let large = place_ok(&mut h, hidden(limit(1, "large", Side::Buy, "100", "40")));
    let raised = SetInstrumentRules {
        hidden_min_notional: Some(dec("3000")),
        ..rules("BTC-USD")
    };
    let changed = h.run_checked(set_rules(raised));
    let canceled: Vec<_> = cancels(&changed).iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(canceled, [(small, CancelReason::RulesChanged)]);
    assert_eq!(open_order(&h, small), None);
    assert_eq!(open_order(&h, large).map(|o| o.hidden), Some(true));
    assert!(book_updates(&changed).is_empty(), "nothing shown changed");
    let below = hidden(limit(2, "new", Side::Sell, "150", "19"));
    assert_rejected(&mut h, cmd(below), RejectReason::HiddenBelowMinimum);
    place_ok(&mut h, hidden(limit(2, "new", Side::Sell, "150", "20")));
    assert_eq!(
        h.engine.instruments()[0].hidden_min_notional,
        Some(units("3000"))
    );
    let snapshot = Engine::restore(&h.engine.snapshot()).expect("restores");
    assert_eq!(snapshot.state_hash(), h.engine.state_hash());
}

/// A listing that took no hidden orders starts taking them once the
/// operator sets a minimum; a change that names none keeps the minimum.
#[test]
fn new_rules_may_start_taking_hidden_orders() {
    let mut h = Harness::funded(1);
    let refused = hidden(limit(1, "h", Side::Buy, "100", "20"));
    assert_rejected(&mut h, cmd(refused.clone()), RejectReason::HiddenNotOffered);
    let offered = SetInstrumentRules {
        hidden_min_notional: Some(dec("0")),
        ..rules("BTC-USD")
    };
    h.run_checked(set_rules(offered));
    let id = place_ok(&mut h, refused);
    let kept = SetInstrumentRules {
        maker_fee_bps: Some(0),
        ..rules("BTC-USD")
    };
    h.run_checked(set_rules(kept));
    assert_eq!(open_order(&h, id).map(|o| o.hidden), Some(true));
}
