//! Market-to-limit orders entered in a call, as at Euronext: they wait for
//! the uncrossing as market orders, and what the auction leaves becomes a
//! limit order at the auction price (docs/market-model.md,
//! "Market-to-limit orders"). Every command is audited.

use exchange_core::Engine;
use exchange_types::*;

use exchange_testkit::engine::*;

fn accepted_price(events: &[Event]) -> Option<Option<u64>> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::Accepted(a) => Some(a.price),
        _ => None,
    })
}

/// BTC-USD collared 10% around 100 (market bounds 90 and 110), in the
/// pre-open call; account 1 has a 1% member band, so its market buys are
/// bounded at 101.
fn pre_open() -> Harness {
    let mut h = funded_with(collared(1000, "100"), 3);
    h.run_checked(set_limits(1, None, None, None, Some(100)));
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    h
}

/// Euronext, "Order Types" (market on opening order: it "becomes limit
/// order at the opening price if partially executed in the opening
/// auction"), the rule Euronext applies to a market-to-limit order
/// entered in a call: it takes part in the auction as a market order and
/// its rest becomes a limit order at the auction price.
#[test]
fn euronext_market_to_limit_in_the_call_rests_its_rest_at_the_auction_price() {
    let mut h = pre_open();
    let events = exec(&mut h, market_to_limit(1, "mtl", Side::Buy, "3"));
    // Accepted without a price, reserved at its bound as a market buy.
    assert_eq!(accepted_price(&events), Some(None));
    let mtl = open_ids(&h)[0];
    assert_eq!(held_usd(&h, 1), units("303.1515"));
    let s1 = place_ok(&mut h, limit(3, "s1", Side::Sell, "100", "2"));
    // The opening auction, then continuous trading.
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    let p100 = units("100");
    assert_eq!(trades(&events), [(p100, units("2"), s1, mtl)]);
    assert_eq!(replaced_prices(&events), [(mtl, p100, units("1"))]);
    assert_eq!(h.engine.instruments()[0].phase, Phase::Continuous);
    assert_eq!(book(&h).bids, [(p100, units("1"))]);
    assert_eq!(held_usd(&h, 1), units("100.05"));
    // It is an ordinary limit order now.
    let events = h.run_checked(cmd(limit(3, "s2", Side::Sell, "100", "1")));
    assert_eq!(
        trades(&events).first().map(|t| (t.0, t.2)),
        Some((p100, mtl))
    );
    assert!(open_ids(&h).is_empty());
    assert_eq!(held_usd(&h, 1), 0);
}

/// With no auction nothing within its bound was offered: it takes the
/// best offer held to its bound, where a market order would rest at the
/// last price (100).
#[test]
fn without_an_auction_it_takes_the_best_opposite_price_within_its_bound() {
    let mut h = pre_open();
    let mtl = place_ok(&mut h, market_to_limit(1, "mtl", Side::Buy, "1"));
    let mkt = place_ok(
        &mut h,
        with_tif(market(1, "mkt", Side::Buy, "1"), TimeInForce::Gtc, None),
    );
    place_ok(&mut h, limit(3, "s1", Side::Sell, "104", "1"));
    let events = h.run_checked(set_phase(Phase::Continuous));
    assert!(trades(&events).is_empty());
    assert_eq!(
        replaced_prices(&events),
        [
            (mtl, units("101"), units("1")),
            (mkt, units("100"), units("1"))
        ]
    );
    assert_eq!(
        book(&h).bids,
        [(units("101"), units("1")), (units("100"), units("1"))]
    );
}

/// With the other side empty too it expires, as a market-to-limit order
/// entered then would be refused; a market order rests at the last price.
#[test]
fn without_an_auction_or_an_opposite_side_it_expires() {
    let mut h = pre_open();
    let mtl = place_ok(&mut h, market_to_limit(1, "mtl", Side::Buy, "1"));
    let mkt = place_ok(
        &mut h,
        with_tif(market(1, "mkt", Side::Buy, "1"), TimeInForce::Gtc, None),
    );
    let events = h.run_checked(set_phase(Phase::Continuous));
    assert_eq!(expired_ids(&events), [mtl]);
    assert_eq!(replaced_prices(&events), [(mkt, units("100"), units("1"))]);
    assert_eq!(open_ids(&h), [mkt]);
}

/// After the closing auction the next phase does not trade: its rest
/// expires, as a market order's does.
#[test]
fn after_the_closing_auction_its_rest_expires() {
    let mut h = funded_with(collared(1000, "100"), 3);
    h.run_checked(set_phase(Phase::ClosingCall));
    let mtl = place_ok(&mut h, market_to_limit(1, "mtl", Side::Buy, "2"));
    let s1 = place_ok(&mut h, limit(3, "s1", Side::Sell, "100", "1"));
    let events = h.run_checked(set_phase(Phase::PostClose));
    assert_eq!(trades(&events), [(units("100"), units("1"), s1, mtl)]);
    assert_eq!(expired_ids(&events), [mtl]);
    assert!(open_ids(&h).is_empty());
    assert_eq!(held_usd(&h, 1), 0);
}

/// Canceled while it waits, it leaves nothing behind.
#[test]
fn a_waiting_market_to_limit_order_cancels_cleanly() {
    let mut h = pre_open();
    place_ok(&mut h, market_to_limit(1, "mtl", Side::Buy, "1"));
    let events = h.run_checked(cancel_client(1, "mtl"));
    assert_eq!(cancels(&events).len(), 1);
    assert!(open_ids(&h).is_empty());
    assert_eq!(held_usd(&h, 1), 0);
}

/// A snapshot taken while it waits restores it as market-to-limit: the
/// restored engine prices it as the live one does (a plain market order
/// would rest at 100 instead of 101), with the same events and state.
#[test]
fn a_snapshot_keeps_a_waiting_order_market_to_limit() {
    let mut h = pre_open();
    place_ok(&mut h, market_to_limit(1, "mtl", Side::Buy, "1"));
    place_ok(&mut h, limit(3, "s1", Side::Sell, "104", "1"));
    let mut restored = Engine::restore(&h.engine.snapshot()).expect("restores");
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    h.ts += 1;
    let stamped = Stamped {
        ts: h.ts,
        command: set_phase(Phase::Continuous),
    };
    let (mut live, mut twin) = (Vec::new(), Vec::new());
    h.engine.apply(&stamped, &mut live);
    restored.apply(&stamped, &mut twin);
    h.engine.audit().expect("the live engine stays sound");
    restored.audit().expect("the restored engine stays sound");
    assert_eq!(twin, live);
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    assert_eq!(book(&h).bids, [(units("101"), units("1"))]);
}
