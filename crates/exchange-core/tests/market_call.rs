//! Market orders after a call: what an uncrossing leaves of them goes on
//! into the next phase, as at Xetra and Euronext (docs/market-model.md,
//! "Market orders in a call"). Into continuous trading it trades at once
//! up to its bound; what is still left rests as a limit order at the last
//! trade price; a band that stops it puts it back in a volatility call;
//! a phase that does not trade expires it. Every command is audited.

use exchange_core::Engine;
use exchange_types::*;

use exchange_testkit::engine::*;

/// A market order for a call: good till canceled, as immediate ones are
/// refused there.
fn mkt(account: u64, id: &str, side: Side, qty: &str) -> Place {
    with_tif(market(account, id, side, qty), TimeInForce::Gtc, None)
}

/// What the account holds aside in USD.
fn held_usd(h: &Harness, account: u64) -> u64 {
    let (total, available) = h.engine.balance(account, &asset("USD")).expect("funded");
    total - available
}

fn phase(h: &Harness) -> Phase {
    h.engine.instruments()[0].phase
}

/// Trades reported after the instrument entered `continuous`.
fn continuous_trades(events: &[Event]) -> Vec<(u64, u64, OrderId, OrderId)> {
    let at = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::Phase(p) if p.phase == Phase::Continuous))
        .expect("entered continuous");
    trades(&events[at..])
}

fn expired(events: &[Event]) -> Vec<(OrderId, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Expired(x) => Some((x.order_id, x.expired_qty, x.filled_qty)),
            _ => None,
        })
        .collect()
}

fn replaced(events: &[Event]) -> Vec<(OrderId, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Replaced(r) => Some((r.order_id, r.price, r.leaves_qty)),
            _ => None,
        })
        .collect()
}

/// Pre-open on BTC-USD collared 10% around 100 (market bounds 90 and
/// 110). Account 1's member band of 1% bounds its market buys at 101.
/// Account 1 buys 3 at market, account 2 buys `b_qty` at market, account
/// 3 offers 3@100 and 1@105. At 100 demand is 3 + `b_qty`, supply 3; at
/// 105 only account 2's buy counts: the auction is at 100, where account
/// 1's earlier market buy takes all three lots and account 2's is left.
fn two_bounds(b_qty: &str) -> (Harness, [OrderId; 4]) {
    let mut h = funded_with(collared(1000, "100"), 3);
    h.run_checked(set_limits(1, None, None, None, Some(100)));
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    let a = place_ok(&mut h, mkt(1, "a", Side::Buy, "3"));
    let b = place_ok(&mut h, mkt(2, "b", Side::Buy, b_qty));
    let s1 = place_ok(&mut h, limit(3, "s1", Side::Sell, "100", "3"));
    let s2 = place_ok(&mut h, limit(3, "s2", Side::Sell, "105", "1"));
    (h, [a, b, s1, s2])
}

// Xetra, "Continuous trading with auctions" (cashmarket.deutsche-boerse.com,
// "How the service works"): "All Market Orders and Limit Orders that were
// not executed, or only executed in part are taken into continuous
// trading." Euronext, "Order Types and Processing" (Market order): it
// "matches best prices until full execution".
#[test]
fn a_carried_market_buy_fills_whole_in_continuous_trading() {
    let (mut h, [a, b, s1, s2]) = two_bounds("1");
    assert_eq!(held_usd(&h, 2), units("110.055"));
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    let (p100, p105) = (units("100"), units("105"));
    assert_eq!(
        trades(&events),
        [(p100, units("3"), s1, a), (p105, units("1"), s2, b)]
    );
    // The second trade is continuous: after the phase changed.
    assert_eq!(continuous_trades(&events), [(p105, units("1"), s2, b)]);
    assert!(open_ids(&h).is_empty());
    // Paid 105 and the taker fee; nothing held.
    assert_eq!(held_usd(&h, 2), 0);
    let (total, _) = h.engine.balance(2, &asset("USD")).expect("funded");
    assert_eq!(total, units("1000000") - units("105.0525"));
}

#[test]
fn a_carried_market_buy_partly_filled_rests_at_the_last_price() {
    let (mut h, [a, b, s1, s2]) = two_bounds("2");
    // Reserved at its bound, 110, for two lots, with the largest fee.
    assert_eq!(held_usd(&h, 2), units("220.11"));
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    assert_eq!(trades(&events)[0], (units("100"), units("3"), s1, a));
    assert_eq!(
        continuous_trades(&events),
        [(units("105"), units("1"), s2, b)]
    );
    // The last lot rests as a limit buy at 105, the last trade price,
    // reported as replaced; its reservation now is 105 and the fee.
    assert_eq!(replaced(&events), [(b, units("105"), units("1"))]);
    assert_eq!(open_ids(&h), [b]);
    assert_eq!(book(&h).bids, [(units("105"), units("1"))]);
    assert_eq!(held_usd(&h, 2), units("105.0525"));
    let view = h.engine.open_orders();
    assert_eq!(
        (view[0].price, view[0].filled_qty),
        (units("105"), units("1"))
    );
    // It is an ordinary limit order now: a sell meets it, and it is gone.
    let events = h.run_checked(cmd(limit(3, "s3", Side::Sell, "104", "1")));
    assert_eq!(
        trades(&events).first().map(|t| (t.0, t.2)),
        Some((units("105"), b))
    );
    assert!(open_ids(&h).is_empty());
    assert_eq!(held_usd(&h, 2), 0);
}

#[test]
fn a_market_buy_with_no_liquidity_rests_at_the_reference_with_its_funds_trued_up() {
    let mut h = funded_with(collared(1000, "100"), 3);
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    assert_eq!(held_usd(&h, 1), 0);
    let m = place_ok(&mut h, mkt(1, "m", Side::Buy, "2"));
    assert_eq!(held_usd(&h, 1), units("220.11"));
    let events = h.run_checked(set_phase(Phase::Continuous));
    assert!(trades(&events).is_empty());
    // No trade yet: the listing's reference price, 100, is the last.
    assert_eq!(replaced(&events), [(m, units("100"), units("2"))]);
    assert_eq!(book(&h).bids, [(units("100"), units("2"))]);
    assert_eq!(held_usd(&h, 1), units("200.1"));
    let events = h.run_checked(cmd(limit(2, "s", Side::Sell, "100", "1")));
    assert_eq!(trades(&events).first().map(|t| t.2), Some(m));
    assert_eq!(held_usd(&h, 1), units("100.05"));
    h.run_checked(cancel_client(1, "m"));
    assert_eq!(held_usd(&h, 1), 0);
}

#[test]
fn without_band_or_collar_a_market_buy_is_bounded_by_its_funds_and_expires_unpriced() {
    let mut h = Harness::funded(2);
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    let m = place_ok(&mut h, mkt(1, "m", Side::Buy, "1"));
    // Bounded where one lot with the fee costs what the account has.
    let held = held_usd(&h, 1);
    assert!(held <= units("1000000") && held > units("999000"));
    let bound = h.engine.open_orders()[0].price;
    assert!(bound > units("999000"));
    // It executes in the auction like any market order.
    let s = place_ok(&mut h, limit(2, "s", Side::Sell, "100", "1"));
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    assert_eq!(trades(&events), [(units("100"), units("1"), s, m)]);
    assert_eq!(held_usd(&h, 1), 0);
    // With no trade and no reference there is no price to rest at.
    h.run_checked(set_phase(Phase::VolatilityAuction));
    let n = place_ok(&mut h, mkt(1, "n", Side::Buy, "1"));
    let events = h.run_checked(set_phase(Phase::Continuous));
    // The last trade (100) prices it: it rests.
    assert_eq!(replaced(&events), [(n, units("100"), units("1"))]);
    // A fresh listing has neither.
    let mut h = Harness::funded(1);
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    let m = place_ok(&mut h, mkt(1, "m", Side::Buy, "1"));
    let events = h.run_checked(set_phase(Phase::Continuous));
    assert_eq!(expired(&events), [(m, units("1"), 0)]);
    assert_eq!(held_usd(&h, 1), 0);
}

#[test]
fn after_the_closing_auction_a_market_remainder_expires() {
    let mut h = funded_with(collared(1000, "100"), 3);
    h.run_checked(set_phase(Phase::ClosingCall));
    let s = place_ok(&mut h, limit(2, "s", Side::Sell, "100", "1"));
    let m = place_ok(&mut h, mkt(1, "m", Side::Buy, "3"));
    let events = h.run_checked(set_phase(Phase::ClosingAuction));
    assert_eq!(trades(&events), [(units("100"), units("1"), s, m)]);
    assert_eq!(expired(&events), [(m, units("2"), units("1"))]);
    assert_eq!(phase(&h), Phase::PostClose);
    assert!(open_ids(&h).is_empty());
    assert_eq!(held_usd(&h, 1), 0);
}

#[test]
fn at_open_market_orders_end_with_the_opening_auction() {
    let mut h = funded_with(collared(1000, "100"), 3);
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    let place = with_tif(market(1, "m", Side::Buy, "2"), TimeInForce::AtOpen, None);
    let m = place_ok(&mut h, place);
    let events = h.run_checked(set_phase(Phase::Continuous));
    assert_eq!(expired(&events), [(m, units("2"), 0)]);
    assert_eq!(held_usd(&h, 1), 0);
}

/// BTC-USD with a reference price of 100, a 10% static band and a 2%
/// dynamic band; no collar, so market buys are bounded at 110 by the
/// static band.
fn banded() -> Harness {
    funded_with(
        AddInstrument {
            reference_price: Some(dec("100")),
            static_band_bps: Some(1000),
            dynamic_band_bps: Some(200),
            volatility_auction_ns: Some(1_000),
            ..btc_usd()
        },
        3,
    )
}

// Xetra, "Protective mechanisms in auctions" (xetra.com): "All non
// executed or partially executed market and limit orders are transferred
// to the next possible trading form".
#[test]
fn a_band_that_stops_a_carried_market_buy_puts_it_back_in_a_volatility_call() {
    let mut h = banded();
    h.run_checked(set_limits(1, None, None, None, Some(100)));
    h.run_checked(set_phase(Phase::VolatilityAuction));
    let a = place_ok(&mut h, mkt(1, "a", Side::Buy, "3"));
    let b = place_ok(&mut h, mkt(2, "b", Side::Buy, "2"));
    let s1 = place_ok(&mut h, limit(3, "s1", Side::Sell, "100", "3"));
    let s2 = place_ok(&mut h, limit(3, "s2", Side::Sell, "105", "1"));
    assert_eq!(held_usd(&h, 2), units("220.11"));
    let events = h.run_checked(set_phase(Phase::Continuous));
    // The auction at 100; then 105 is beyond 2% of 100: no trade, and the
    // instrument is in a volatility call again with b waiting in it.
    assert_eq!(trades(&events), [(units("100"), units("3"), s1, a)]);
    assert_eq!(phase(&h), Phase::VolatilityAuction);
    assert_eq!(open_ids(&h), [b, s2]);
    assert_eq!(held_usd(&h, 2), units("220.11"));
    assert_eq!(book(&h).bids, []);
    let restored = Engine::restore(&h.engine.snapshot()).expect("restores");
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    // That call's uncrossing executes it at 105, and its last lot rests.
    let events = h.run_checked(set_phase(Phase::Continuous));
    assert_eq!(trades(&events), [(units("105"), units("1"), s2, b)]);
    assert_eq!(replaced(&events), [(b, units("105"), units("1"))]);
    assert_eq!(held_usd(&h, 2), units("105.0525"));
    assert_eq!(phase(&h), Phase::Continuous);
}

#[test]
fn snapshots_around_the_carry_over_continue_exactly() {
    let (mut h, _) = two_bounds("2");
    let mut restored = Engine::restore(&h.engine.snapshot()).expect("restores");
    let rest = [
        set_phase(Phase::OpeningAuction),
        cmd(limit(3, "s3", Side::Sell, "106", "1")),
        cmd(limit(3, "s4", Side::Sell, "105", "1")),
        cancel_client(2, "b"),
    ];
    for command in rest {
        h.ts += 1;
        let stamped = Stamped { ts: h.ts, command };
        let (mut x, mut y) = (Vec::new(), Vec::new());
        h.engine.apply(&stamped, &mut x);
        restored.apply(&stamped, &mut y);
        assert_eq!(x, y);
        assert_eq!(h.engine.state_hash(), restored.state_hash());
        h.engine.audit().expect("consistent");
        let again = Engine::restore(&h.engine.snapshot()).expect("restores");
        assert_eq!(again.state_hash(), h.engine.state_hash());
    }
}
