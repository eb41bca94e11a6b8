//! The auction's reference price rule through the engine: the venues'
//! worked examples uncross where their documents say under the rule of
//! each venue, with every invariant checked after each command, and the
//! rule survives snapshots and rule changes.

use exchange_core::Engine;
use exchange_types::event::AuctionKind;
use exchange_types::*;

use exchange_testkit::engine::*;

use ReferencePriceRule::{LimitNearest, Reference};

/// BTC-USD collared 10% around `reference` under `rule`, in its pre-open
/// call, with four funded accounts.
fn pre_open(reference: &str, rule: ReferencePriceRule) -> Harness {
    let mut h = funded_with(
        AddInstrument {
            reference_price_rule: rule,
            ..collared(1000, reference)
        },
        4,
    );
    h.run_checked(set_phase(Phase::Closed));
    h.run_checked(set_phase(Phase::PreOpen));
    h
}

/// A market order for a call: good till canceled, as immediate ones are
/// refused there.
fn mkt(account: u64, id: &str, side: Side, qty: &str) -> Place {
    with_tif(market(account, id, side, qty), TimeInForce::Gtc, None)
}

/// Places every order of `book`, (account, side, limit or `None` for a
/// market order, qty), then opens: the opening auction's price and volume.
fn open_with(h: &mut Harness, book: &[(u64, Side, Option<&str>, &str)]) -> Option<(u64, u64)> {
    for (n, &(account, side, price, qty)) in book.iter().enumerate() {
        let id = format!("o{n}");
        let place = match price {
            Some(p) => limit(account, &id, side, p, qty),
            None => mkt(account, &id, side, qty),
        };
        place_ok(h, place);
    }
    let indicative = h.engine.indicative(&sym("BTC-USD")).and_then(|i| i.price);
    let events = h.run_checked(set_phase(Phase::OpeningAuction));
    let auction = auctions(&events).pop().map(|(kind, price, volume)| {
        assert_eq!(kind, AuctionKind::Open);
        (price, volume)
    });
    assert_eq!(auction.map(|a| a.0), indicative);
    auction
}

/// Xetra Release 14.0 Market Model Equities, §13.1.2, example 4 (a
/// hundred shares a lot): market orders of 1 on both sides, bid 1@199,
/// ask 1@202. Both limits execute 1 with a surplus of 1, on opposite
/// sides: the limit nearest the reference.
#[test]
fn xetra_example_4_through_the_engine() {
    let book = [
        (1, Side::Buy, None, "1"),
        (2, Side::Buy, Some("199"), "1"),
        (3, Side::Sell, None, "1"),
        (4, Side::Sell, Some("202"), "1"),
    ];
    for (reference, price) in [("199", "199"), ("200", "199")] {
        let mut h = pre_open(reference, LimitNearest);
        assert_eq!(open_with(&mut h, &book), Some((units(price), units("1"))));
    }
    // Euronext's rule: the market orders alone meet at the reference,
    // with no surplus, which beats both limits.
    let mut h = pre_open("200", Reference);
    assert_eq!(open_with(&mut h, &book), Some((units("200"), units("1"))));
}

/// Xetra Release 14.0 Market Model Equities, §13.1.2, example 5: bids
/// 3@202 and 2@201, asks 2@198 and 3@199; 199 and 201 both execute 5
/// with no surplus.
#[test]
fn xetra_example_5_through_the_engine() {
    let book = [
        (1, Side::Buy, Some("202"), "3"),
        (2, Side::Buy, Some("201"), "2"),
        (3, Side::Sell, Some("198"), "2"),
        (4, Side::Sell, Some("199"), "3"),
    ];
    for (reference, price) in [("200", "201"), ("202", "201"), ("198", "199")] {
        let mut h = pre_open(reference, LimitNearest);
        assert_eq!(open_with(&mut h, &book), Some((units(price), units("5"))));
    }
    let mut h = pre_open("200", Reference);
    assert_eq!(open_with(&mut h, &book), Some((units("200"), units("5"))));
}

/// Euronext, Pure Market Order guide, call phase examples 3 and 5,
/// reference 10.00: a market buy of 40 against a sell of 40 at 9.98
/// trades at the reference, against one at 10.02 at 10.02.
#[test]
fn euronext_pure_market_order_examples_through_the_engine() {
    let at = |ask: &str, rule| {
        let mut h = pre_open("10", rule);
        open_with(
            &mut h,
            &[(1, Side::Buy, None, "40"), (2, Side::Sell, Some(ask), "40")],
        )
        .map(|(price, _)| price)
    };
    assert_eq!(at("9.98", Reference), Some(units("10")));
    assert_eq!(at("10.02", Reference), Some(units("10.02")));
    // Xetra's rule has only the limit to choose.
    assert_eq!(at("9.98", LimitNearest), Some(units("9.98")));
    assert_eq!(at("10.02", LimitNearest), Some(units("10.02")));
}

/// The rule is part of the state: its hash tells the two apart, a
/// restored copy keeps it, and a change of the instrument's other rules
/// keeps it too.
#[test]
fn the_rule_is_in_the_snapshot_and_outlives_rule_changes() {
    let nearest = pre_open("10", LimitNearest);
    let mut euronext = pre_open("10", Reference);
    assert_ne!(nearest.engine.state_hash(), euronext.engine.state_hash());
    for h in [&nearest, &euronext] {
        let bytes = h.engine.snapshot();
        let restored = Engine::restore(&bytes).expect("restores");
        assert_eq!(restored.snapshot(), bytes);
        assert_eq!(
            restored.instruments()[0].reference_price_rule,
            h.engine.instruments()[0].reference_price_rule
        );
    }
    euronext.run_checked(set_rules(SetInstrumentRules {
        maker_fee_bps: Some(0),
        ..rules("BTC-USD")
    }));
    assert_eq!(euronext.engine.instruments()[0].maker_fee_bps, 0);
    assert_eq!(
        euronext.engine.instruments()[0].reference_price_rule,
        Reference
    );
    // And the restored copy uncrosses by it: the reference, not the limit.
    let mut restored = Harness {
        engine: Engine::restore(&euronext.engine.snapshot()).expect("restores"),
        ts: euronext.ts,
    };
    let book = [
        (1, Side::Buy, None, "40"),
        (2, Side::Sell, Some("9.98"), "40"),
    ];
    assert_eq!(
        open_with(&mut restored, &book).map(|a| a.0),
        Some(units("10"))
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(proptest_config(64))]

        /// Any call book, market orders among its limit orders, uncrosses
        /// under either rule at the indicative price, into an uncrossed
        /// book, with every invariant holding after every command and a
        /// copy restored mid-call doing exactly the same. Under Xetra's
        /// rule the price is a limit price, or the reference when no limit
        /// price executes.
        #[test]
        fn either_rule_uncrosses_at_one_price(
            orders in prop::collection::vec(
                (
                    any::<bool>(),
                    prop_oneof![3 => (95u64..106).prop_map(Some), 1 => Just(None)],
                    1u64..5,
                    1u64..5,
                ),
                1..30,
            ),
            reference in 96u64..105,
            rule in prop::sample::select(ReferencePriceRule::ALL),
        ) {
            let mut h = pre_open(&reference.to_string(), rule);
            let mut limits = Vec::new();
            for (n, (buy, price, qty, account)) in orders.iter().enumerate() {
                let side = if *buy { Side::Buy } else { Side::Sell };
                let (id, qty) = (format!("o{n}"), qty.to_string());
                let place = match price {
                    Some(p) => limit(*account, &id, side, &p.to_string(), &qty),
                    None => mkt(*account, &id, side, &qty),
                };
                let events = h.run_checked(cmd(place));
                prop_assert_eq!(reject_reason(&events), None);
                limits.extend(price.map(|p| units(&p.to_string())));
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
            match indicative.price {
                None => prop_assert!(trades.is_empty()),
                Some(price) => {
                    prop_assert!(trades.iter().all(|t| t.0 == price));
                    prop_assert_eq!(trades.iter().map(|t| t.1).sum::<u64>(), indicative.volume);
                    if rule == LimitNearest && !limits.contains(&price) {
                        prop_assert_eq!(price, units(&reference.to_string()));
                    }
                }
            }
            let b = book(&h);
            if let (Some(bid), Some(ask)) = (b.bids.first(), b.asks.first()) {
                prop_assert!(bid.0 < ask.0);
            }
        }
    }
}
