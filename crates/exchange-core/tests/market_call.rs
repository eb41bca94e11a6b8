//! Market orders after a call: what an uncrossing leaves of them goes on
//! into the next phase, as at Xetra and Euronext (docs/market-model.md,
//! "Market orders in a call"). Into continuous trading it would trade at
//! once up to its bound, but an uncrossing at the maximum volume leaves
//! nothing there (the property test checks it); what is left rests as a
//! limit order at the last trade price; a phase that does not trade
//! expires it. Every command is audited.

use exchange_core::Engine;
use exchange_types::*;

use exchange_testkit::engine::*;

/// A market order for a call: good till canceled, as immediate ones are
/// refused there.
fn mkt(account: u64, id: &str, side: Side, qty: &str) -> Place {
    with_tif(market(account, id, side, qty), TimeInForce::Gtc, None)
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

/// Pre-open on BTC-USD collared 10% around 100 (market bounds 90 and
/// 110). Account 1's member band of 1% bounds its market buys at 101.
/// Account 1 buys 3 at market, account 2 buys `b_qty` at market, account
/// 3 offers 3@100 and 1@105. At 100 demand is 3 + `b_qty`, supply 3; at
/// 105 only account 2's buy counts: the auction is at 100, where account
/// 2's buy, bounded higher, goes first and account 1's is left over.
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
// trading." Euronext, "Order Types and Processing" (Market order): "After
// partial execution ranked at the top of order book without price"; here
// it rests priced at the last trade (docs/market-model.md says why).
#[test]
fn a_market_buy_partly_filled_in_the_auction_rests_at_the_last_price() {
    let (mut h, [a, b, s1, s2]) = two_bounds("1");
    // Reserved at its bound, 101, for three lots, with the largest fee.
    assert_eq!(held_usd(&h, 1), units("303.1515"));
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    let p100 = units("100");
    assert_eq!(
        trades(&events),
        [(p100, units("1"), s1, b), (p100, units("2"), s1, a)]
    );
    // Nothing within its bound is left for continuous trading (the ask
    // at 105 is beyond 101): its last lot rests as a limit buy at 100,
    // the last trade price, reported as replaced, holding 100 and the fee.
    assert!(continuous_trades(&events).is_empty());
    assert_eq!(replaced_prices(&events), [(a, p100, units("1"))]);
    assert_eq!(open_ids(&h), [a, s2]);
    assert_eq!(book(&h).bids, [(p100, units("1"))]);
    assert_eq!(held_usd(&h, 1), units("100.05"));
    assert_eq!(held_usd(&h, 2), 0);
    let view = &h.engine.open_orders()[0];
    assert_eq!((view.price, view.filled_qty), (p100, units("2")));
    // It is an ordinary limit order now: a sell meets it, and it is gone.
    let events = h.run_checked(cmd(limit(3, "s3", Side::Sell, "100", "1")));
    assert_eq!(trades(&events).first().map(|t| (t.0, t.2)), Some((p100, a)));
    assert_eq!(open_ids(&h), [s2]);
    assert_eq!(held_usd(&h, 1), 0);
}

#[test]
fn a_limit_bid_beyond_a_market_buys_bound_goes_first_and_the_book_stays_uncrossed() {
    let mut h = funded_with(collared(1000, "100"), 3);
    h.run_checked(set_limits(1, None, None, None, Some(100)));
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    let m = place_ok(&mut h, mkt(1, "m", Side::Buy, "2"));
    let bid = place_ok(&mut h, limit(2, "bid", Side::Buy, "102", "1"));
    let s1 = place_ok(&mut h, limit(3, "s1", Side::Sell, "100", "2"));
    let s2 = place_ok(&mut h, limit(3, "s2", Side::Sell, "102", "1"));
    // 100 executes 2 (a buy surplus of 1), 102 only 1: 100, whatever
    // the rule for the reference price.
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    let p100 = units("100");
    // The bid at 102 is priced beyond the market buy's bound (101): it
    // goes first. Were the market buy first, it would take both lots and
    // leave the bid at 102 crossing the ask at 102.
    assert_eq!(
        trades(&events),
        [(p100, units("1"), bid, s1), (p100, units("1"), s1, m)]
    );
    assert_eq!(open_ids(&h), [m, s2]);
    assert_eq!(book(&h).bids, [(p100, units("1"))]);
    assert_eq!(book(&h).asks, [(units("102"), units("1"))]);
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
    assert_eq!(replaced_prices(&events), [(m, units("100"), units("2"))]);
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
    assert_eq!(replaced_prices(&events), [(n, units("100"), units("1"))]);
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
/// static band. Volatility calls last 1,000 ns.
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
fn a_market_buy_in_a_volatility_interruption_goes_on_into_continuous_trading() {
    let mut h = banded();
    // A buy of 2@110 against asks 1@100 and 1@105: 105 is beyond 2% of
    // 100, so the instrument is interrupted with the buy's lot resting.
    place_ok(&mut h, limit(3, "s1", Side::Sell, "100", "1"));
    let s2 = place_ok(&mut h, limit(3, "s2", Side::Sell, "105", "1"));
    let started = h.ts + 1;
    let events = h.run_checked(cmd(limit(1, "b", Side::Buy, "110", "2")));
    assert_eq!(trades(&events).len(), 1);
    assert_eq!(phase(&h), Phase::VolatilityAuction);
    let b = open_ids(&h)[1];
    // A market buy of 3 joins the call, bounded at the static band's 110.
    let m = place_ok(&mut h, mkt(2, "m", Side::Buy, "3"));
    assert_eq!(held_usd(&h, 2), units("330.165"));
    let restored = Engine::restore(&h.engine.snapshot()).expect("restores");
    assert_eq!(restored.state_hash(), h.engine.state_hash());
    // The call ends: 105 and 110 both execute 1 with a buy surplus of 3,
    // so the buyers press to 110. The market buy, bounded there too,
    // goes first; its two remaining lots rest at 110, the last price,
    // behind the limit buy already there.
    h.ts = started + 1_000 - 1;
    let events = h.run_checked(Command::Tick);
    assert_eq!(trades(&events), [(units("110"), units("1"), s2, m)]);
    assert_eq!(phase(&h), Phase::Continuous);
    assert_eq!(replaced_prices(&events), [(m, units("110"), units("2"))]);
    assert_eq!(book(&h).bids, [(units("110"), units("3"))]);
    assert_eq!(open_ids(&h), [b, m]);
    assert_eq!(held_usd(&h, 2), units("220.11"));
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

#[test]
fn a_halt_in_a_call_keeps_market_orders_waiting_and_resume_carries_them() {
    let (mut h, [a, b, s1, s2]) = two_bounds("2");
    h.run_checked(halt("BTC-USD"));
    assert_eq!(open_ids(&h), [a, b, s1, s2]);
    let events = h.run_checked(resume("BTC-USD"));
    let p100 = units("100");
    assert_eq!(
        trades(&events),
        [(p100, units("2"), s1, b), (p100, units("1"), s1, a)]
    );
    assert_eq!(replaced_prices(&events), [(a, p100, units("2"))]);
    assert_eq!(open_ids(&h), [a, s2]);
    assert_eq!(held_usd(&h, 1), units("200.1"));
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// How the call ends.
    #[derive(Clone, Copy, Debug)]
    enum End {
        Open,
        Close,
        Volatility,
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Random call books with market orders of two bounds (account
        /// 1's member band bounds its buys at 101 and sells at 99; the
        /// collar bounds the others at 110 and 90), ended by an opening,
        /// a closing or an operator's volatility auction (no bands, so
        /// none starts another), then continuous orders. Some of the
        /// market orders are market-to-limit, which wait alike.
        /// Every command is audited and replayed on a restored copy.
        /// After a close no market order is open; after the others
        /// each one left is a limit order within its bound, the book is
        /// not crossed, and nothing trades after the auction.
        #[test]
        fn carried_market_orders_keep_the_book_and_the_funds_whole(
            orders in prop::collection::vec(
                (
                    any::<bool>(),
                    prop_oneof![2 => (95u64..106).prop_map(Some), 1 => Just(None)],
                    1u64..5,
                    1u64..4,
                    any::<bool>(),
                ),
                1..30,
            ),
            end in prop_oneof![Just(End::Open), Just(End::Close), Just(End::Volatility)],
            after in prop::collection::vec((any::<bool>(), 95u64..106, 1u64..4), 0..6),
        ) {
            let mut h = funded_with(collared(1000, "100"), 3);
            h.run_checked(set_limits(1, None, None, None, Some(100)));
            let (call, auction) = match end {
                End::Open => {
                    h.run_checked(set_phase(Phase::Closed));
                    (Phase::PreOpen, Phase::OpeningAuction)
                }
                End::Close => (Phase::ClosingCall, Phase::ClosingAuction),
                End::Volatility => (Phase::VolatilityAuction, Phase::Continuous),
            };
            h.run_checked(set_phase(call));
            let mut restored = Engine::restore(&h.engine.snapshot()).expect("restores");
            let mut commands = Vec::new();
            for (n, (buy, price, qty, account, to_limit)) in orders.iter().enumerate() {
                let side = if *buy { Side::Buy } else { Side::Sell };
                let (id, qty) = (format!("o{n}"), qty.to_string());
                commands.push(cmd(match price {
                    Some(p) => limit(*account, &id, side, &p.to_string(), &qty),
                    None if *to_limit => market_to_limit(*account, &id, side, &qty),
                    None => mkt(*account, &id, side, &qty),
                }));
            }
            commands.push(set_phase(auction));
            for (n, (buy, price, qty)) in after.iter().enumerate() {
                let side = if *buy { Side::Buy } else { Side::Sell };
                let id = format!("c{n}");
                commands.push(cmd(limit(2, &id, side, &price.to_string(), &qty.to_string())));
            }
            let mut markets = Vec::new();
            let mut ending = Vec::new();
            for command in commands {
                let is_end = matches!(command, Command::SetPhase { .. });
                h.ts += 1;
                let stamped = Stamped { ts: h.ts, command };
                let (mut x, mut y) = (Vec::new(), Vec::new());
                h.engine.apply(&stamped, &mut x);
                restored.apply(&stamped, &mut y);
                prop_assert_eq!(&x, &y);
                prop_assert_eq!(h.engine.state_hash(), restored.state_hash());
                if let Err(violation) = h.engine.audit() {
                    prop_assert!(false, "invariant broken: {}", violation);
                }
                for e in &x {
                    if let EventKind::Accepted(a) = &e.kind {
                        if matches!(a.order_type, OrderType::Market | OrderType::MarketToLimit) {
                            markets.push(a.order_id);
                        }
                    }
                }
                if is_end {
                    ending = x;
                }
            }
            let open = h.engine.open_orders();
            let left: Vec<_> = open.iter().filter(|o| markets.contains(&o.order_id)).collect();
            match end {
                End::Close => prop_assert!(left.is_empty()),
                End::Open | End::Volatility => {
                    // Limit orders now, at the last price within their
                    // bounds, which are within the collar.
                    prop_assert_eq!(h.engine.instruments()[0].phase, Phase::Continuous);
                    for o in left {
                        prop_assert!(units("90") <= o.price && o.price <= units("110"));
                    }
                    let b = book(&h);
                    if let (Some(bid), Some(ask)) = (b.bids.first(), b.asks.first()) {
                        prop_assert!(bid.0 < ask.0);
                    }
                    let settled = ending.iter().position(|e| {
                        matches!(&e.kind, EventKind::Phase(p) if p.phase == Phase::Continuous)
                    });
                    // An uncrossing at the maximum volume leaves nothing
                    // within a carried market order's bound.
                    if let Some(at) = settled {
                        prop_assert!(trades(&ending[at..]).is_empty());
                    }
                }
            }
        }
    }
}
