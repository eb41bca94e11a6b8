//! The auction price against a naive evaluation of every candidate, and
//! against the venues' own worked examples.

use super::*;
use proptest::prelude::*;

use ReferencePriceRule::{LimitNearest, Reference};

fn l(price: u64, qty: u64) -> LevelQty {
    LevelQty { price, qty }
}

/// Demand and supply at `p` counted order by order.
fn point_at(p: u64, orders: [&[(u64, u64)]; 4]) -> Point {
    let [bids, asks, mb, ms] = orders;
    Point {
        price: p,
        demand: bids
            .iter()
            .chain(mb)
            .filter(|o| o.0 >= p)
            .map(|o| u128::from(o.1))
            .sum::<u128>(),
        supply: asks
            .iter()
            .chain(ms)
            .filter(|o| o.0 <= p)
            .map(|o| u128::from(o.1))
            .sum::<u128>(),
    }
}

/// Every candidate evaluated from the orders themselves. `mb` and `ms`
/// are market orders as (bound, qty).
fn naive(
    bids: &[(u64, u64)],
    asks: &[(u64, u64)],
    mb: &[(u64, u64)],
    ms: &[(u64, u64)],
    reference: Option<u64>,
    rule: ReferencePriceRule,
) -> Option<Uncross> {
    let orders = [bids, asks, mb, ms];
    let mut candidates: Vec<u64> = bids.iter().chain(asks).map(|o| o.0).collect();
    if rule == Reference {
        candidates.extend(reference);
    }
    candidates.sort_unstable();
    candidates.dedup();
    let points: Vec<Point> = candidates.iter().map(|&p| point_at(p, orders)).collect();
    let limits = match (choose(&points, reference, rule), reference) {
        (None, Some(r)) if rule == LimitNearest => choose(&[point_at(r, orders)], reference, rule),
        (chosen, _) => chosen,
    };
    // Every bound of a finite price, when market orders are on both sides.
    if mb.is_empty() || ms.is_empty() || reference.is_none() {
        return limits;
    }
    candidates.extend(
        mb.iter()
            .chain(ms)
            .map(|o| o.0)
            .filter(|&p| p != 0 && p != u64::MAX),
    );
    candidates.extend(limits.map(|u| u.price));
    candidates.sort_unstable();
    candidates.dedup();
    let points: Vec<Point> = candidates.iter().map(|&p| point_at(p, orders)).collect();
    match (choose(&points, reference, rule), limits) {
        (Some(all), Some(limits)) if all.volume > limits.volume => Some(all),
        (Some(all), None) => Some(all),
        (_, limits) => limits,
    }
}

fn aggregate(orders: &[(u64, u64)], descending: bool) -> Vec<LevelQty> {
    let mut map = std::collections::BTreeMap::new();
    for &(p, q) in orders {
        *map.entry(p).or_insert(0) += q;
    }
    let mut levels: Vec<LevelQty> = map.into_iter().map(|(p, q)| l(p, q)).collect();
    if descending {
        levels.reverse();
    }
    levels
}

/// The auction price of a book given order by order, limit orders as
/// (price, qty) and market orders as quantities without bound.
fn price_of(
    bids: &[(u64, u64)],
    asks: &[(u64, u64)],
    market: (u64, u64),
    reference: Option<u64>,
    rule: ReferencePriceRule,
) -> Option<u64> {
    let mb: Vec<(u64, u64)> = (market.0 > 0)
        .then_some((u64::MAX, market.0))
        .into_iter()
        .collect();
    let ms: Vec<(u64, u64)> = (market.1 > 0)
        .then_some((0, market.1))
        .into_iter()
        .collect();
    let fast = uncross(
        &aggregate(bids, true),
        &aggregate(asks, false),
        &aggregate(&mb, true),
        &aggregate(&ms, false),
        reference,
        rule,
    );
    assert_eq!(fast, naive(bids, asks, &mb, &ms, reference, rule));
    fast.map(|u| u.price)
}

#[test]
fn maximum_volume_wins() {
    // Bids 100@10, 50@11; asks 80@9, 60@10. At 10: demand 150,
    // supply 140 -> 140; at 11: demand 50; at 9: supply 80.
    for rule in ReferencePriceRule::ALL {
        let u = uncross(
            &[l(11, 50), l(10, 100)],
            &[l(9, 80), l(10, 60)],
            &[],
            &[],
            None,
            *rule,
        );
        let expected = Uncross {
            price: 10,
            volume: 140,
            surplus: 10,
        };
        assert_eq!(u, Some(expected));
    }
}

#[test]
fn buy_pressure_takes_the_highest_price_and_sell_pressure_the_lowest() {
    // 10 and 11 both execute 100 with a buy surplus of 20, then a sell one.
    for rule in ReferencePriceRule::ALL {
        assert_eq!(
            price_of(&[(11, 120)], &[(10, 100)], (0, 0), Some(5), *rule),
            Some(11)
        );
        assert_eq!(
            price_of(&[(11, 100)], &[(10, 120)], (0, 0), Some(20), *rule),
            Some(10)
        );
    }
}

#[test]
fn balanced_book_takes_the_reference_or_the_limit_nearest_it() {
    let (bids, asks) = (&[(12, 100)][..], &[(8, 100)][..]);
    let price = |reference, rule| price_of(bids, asks, (0, 0), reference, rule);
    // Euronext's rule: the reference itself within the range.
    assert_eq!(price(Some(10), Reference), Some(10));
    assert_eq!(price(Some(20), Reference), Some(12));
    assert_eq!(price(Some(3), Reference), Some(8));
    assert_eq!(price(None, Reference), Some(8));
    // Xetra's: the limit nearest it, the higher when halfway.
    assert_eq!(price(Some(9), LimitNearest), Some(8));
    assert_eq!(price(Some(10), LimitNearest), Some(12));
    assert_eq!(price(Some(11), LimitNearest), Some(12));
    assert_eq!(price(Some(20), LimitNearest), Some(12));
    assert_eq!(price(Some(3), LimitNearest), Some(8));
    assert_eq!(price(None, LimitNearest), Some(8));
}

#[test]
fn nothing_crosses_nothing_executes() {
    for rule in ReferencePriceRule::ALL {
        assert_eq!(
            uncross(&[l(9, 10)], &[l(10, 10)], &[], &[], Some(9), *rule),
            None
        );
        assert_eq!(uncross(&[], &[l(10, 10)], &[], &[], None, *rule), None);
        // Market orders alone and no reference: no price to trade at.
        assert_eq!(
            uncross(&[], &[], &[l(20, 5)], &[l(1, 5)], None, *rule),
            None
        );
    }
}

#[test]
fn market_orders_count_at_every_price() {
    // A market buy of 30 against asks 20@10 and 20@11: 11 executes 30.
    for rule in ReferencePriceRule::ALL {
        let u = uncross(
            &[],
            &[l(10, 20), l(11, 20)],
            &[l(u64::MAX, 30)],
            &[],
            None,
            *rule,
        );
        assert_eq!(u.map(|u| (u.price, u.volume)), Some((11, 30)));
    }
}

#[test]
fn a_market_buy_counts_only_up_to_its_bound() {
    for rule in ReferencePriceRule::ALL {
        // Bounded at 10, the market buy of 30 cannot take the ask at 11:
        // 10 executes 20, and 11 executes nothing.
        let u = uncross(&[], &[l(10, 20), l(11, 20)], &[l(10, 30)], &[], None, *rule);
        assert_eq!(u.map(|u| (u.price, u.volume)), Some((10, 20)));
        // Its bound is no candidate: against one ask at 10 the price is 10
        // even with a buy surplus, not the bound 15.
        let u = uncross(&[], &[l(10, 20)], &[l(15, 30)], &[], None, *rule);
        assert_eq!(u.map(|u| (u.price, u.volume)), Some((10, 20)));
        // Market orders alone trade at the reference, within both bounds.
        let u = uncross(&[], &[], &[l(20, 5)], &[l(1, 3)], Some(12), *rule);
        assert_eq!(u.map(|u| (u.price, u.volume)), Some((12, 3)));
        // With the reference beyond a bound, they still cross each other:
        // the bounds are the candidates then, and with a buy surplus at
        // both the higher wins.
        let u = uncross(&[], &[], &[l(20, 5)], &[l(1, 3)], Some(25), *rule);
        assert_eq!(u.map(|u| (u.price, u.volume)), Some((20, 3)));
    }
}

#[test]
fn bounded_market_orders_crossing_between_two_limits_execute_at_a_bound() {
    for rule in ReferencePriceRule::ALL {
        // Limits: a bid and an ask at 95, an ask at 102. A market sell
        // bounded at 99 and a market buy of 3 bounded at 101: at 95 only
        // 1 executes and at 102 the buy no longer counts, but at 99 and
        // at 101 the market sell meets the market buy: 2, each with a buy
        // surplus of 1, so the higher (rule 3). Without the bounds the two
        // would trade against each other as continuous trading began.
        // Euronext's rule has the reference 100 as a candidate already,
        // and it executes as much.
        let u = uncross(
            &[l(95, 1)],
            &[l(95, 1), l(102, 1)],
            &[l(101, 3)],
            &[l(99, 1)],
            Some(100),
            *rule,
        );
        let expected = match rule {
            LimitNearest => 101,
            Reference => 100,
        };
        assert_eq!(
            u.map(|u| (u.price, u.volume)),
            Some((expected, 2)),
            "{rule:?}"
        );
        // A limit price executing as much keeps the price: bounds are no
        // candidates then.
        let u = uncross(
            &[],
            &[l(95, 3), l(102, 1)],
            &[l(101, 3)],
            &[l(99, 1)],
            Some(100),
            *rule,
        );
        assert_eq!(u.map(|u| u.price), Some(95), "{rule:?}");
    }
}

/// Xetra's published examples of auction price determination: Deutsche
/// Börse, "Xetra Release 14.0 Market Model Equities", §13.1.2, examples 1
/// to 6 (prices in euros, as whole ticks). The books and prices follow a
/// public transcription of the examples into tests of a Xetra model, not
/// the document itself: in examples 4 and 5 the reference picks the limit
/// nearest it, the higher one when halfway.
mod xetra_market_model {
    use super::*;

    /// Example 1: one limit has the highest volume and lowest surplus.
    #[test]
    fn example_1_one_limit_executes_most() {
        let bids = [(202, 200), (201, 200), (200, 300)];
        let asks = [(200, 100), (198, 200), (197, 400)];
        assert_eq!(
            price_of(&bids, &asks, (0, 0), None, LimitNearest),
            Some(200)
        );
    }

    /// Example 2: several limits, a buy surplus: the highest.
    #[test]
    fn example_2_buy_surplus_takes_the_highest_limit() {
        let bids = [(202, 400), (201, 200)];
        let asks = [(199, 300), (198, 200)];
        assert_eq!(
            price_of(&bids, &asks, (0, 0), None, LimitNearest),
            Some(201)
        );
    }

    /// Example 3: several limits, a sell surplus: the lowest.
    #[test]
    fn example_3_sell_surplus_takes_the_lowest_limit() {
        let bids = [(202, 300), (201, 200)];
        let asks = [(199, 400), (198, 200)];
        assert_eq!(
            price_of(&bids, &asks, (0, 0), None, LimitNearest),
            Some(199)
        );
    }

    /// Example 4: market orders on both sides, bid 100@199, ask 100@202:
    /// 199 leaves a buy surplus, 202 a sell surplus, both of 100, so the
    /// reference decides among the two limits.
    #[test]
    fn example_4_surplus_on_both_sides() {
        let (bids, asks) = ([(199, 100)], [(202, 100)]);
        let price = |reference| price_of(&bids, &asks, (100, 100), Some(reference), LimitNearest);
        assert_eq!(price(199), Some(199));
        assert_eq!(price(200), Some(199));
        // Euronext's rule takes 200 instead: there the market orders
        // alone meet, leaving no surplus, which beats both limits.
        let euronext = price_of(&bids, &asks, (100, 100), Some(200), Reference);
        assert_eq!(euronext, Some(200));
    }

    /// Example 5: 199 and 201 both execute 500 with no surplus.
    #[test]
    fn example_5_no_surplus() {
        let bids = [(202, 300), (201, 200)];
        let asks = [(198, 200), (199, 300)];
        let price = |reference| price_of(&bids, &asks, (0, 0), Some(reference), LimitNearest);
        // Halfway between the two limits: the higher.
        assert_eq!(price(200), Some(201));
        assert_eq!(price(202), Some(201));
        assert_eq!(price(198), Some(199));
        // Euronext's rule takes the reference within the range.
        let euronext = price_of(&bids, &asks, (0, 0), Some(200), Reference);
        assert_eq!(euronext, Some(200));
    }

    /// Example 6: only market orders (900 to buy, 800 to sell): the
    /// reference price, whatever it is.
    #[test]
    fn example_6_only_market_orders_take_the_reference() {
        for rule in ReferencePriceRule::ALL {
            assert_eq!(price_of(&[], &[], (900, 800), Some(250), *rule), Some(250));
            assert_eq!(price_of(&[], &[], (900, 800), Some(99), *rule), Some(99));
        }
    }
}

/// Euronext's published call-phase examples, reference price 10.00 (in
/// cents here): the "Pure Market Order" guide, call phase examples 1 to 5,
/// and the "Market to Limit Order" guide, call phase examples 1 to 3,
/// following a public transcription of the examples into tests of a
/// Euronext model, not the guides themselves. A market-to-limit order
/// counts as a market order in the call.
mod euronext_guides {
    use super::*;

    /// Pure market order, example 1: market-to-limit buy 50, buy 90@10.10,
    /// buy 10@9.90; market-to-limit sell 40, sell 100@10.08, sell
    /// 60@10.15. 10.08 and 10.10 both execute 140 with no surplus: the
    /// nearer the reference, 10.08. A market buy of 20 then gives both a
    /// buy surplus: the higher, 10.10.
    #[test]
    fn pure_market_order_example_1() {
        let bids = [(1010, 90), (990, 10)];
        let asks = [(1008, 100), (1015, 60)];
        for rule in ReferencePriceRule::ALL {
            assert_eq!(
                price_of(&bids, &asks, (50, 40), Some(1000), *rule),
                Some(1008)
            );
            assert_eq!(
                price_of(&bids, &asks, (70, 40), Some(1000), *rule),
                Some(1010)
            );
        }
    }

    /// Example 2: market-to-limit buy 40 against a market sell 45, then a
    /// market buy 20: market orders alone, at the reference.
    #[test]
    fn pure_market_order_example_2() {
        for rule in ReferencePriceRule::ALL {
            assert_eq!(price_of(&[], &[], (40, 45), Some(1000), *rule), Some(1000));
            assert_eq!(price_of(&[], &[], (60, 45), Some(1000), *rule), Some(1000));
        }
    }

    /// Example 3: market buy 40, sell 40@9.98: every price from 9.98 up
    /// executes 40 with no surplus, and Euronext takes the reference,
    /// 10.00. Xetra's rule has only the limit, 9.98.
    #[test]
    fn pure_market_order_example_3_takes_the_reference() {
        let asks = [(998, 40)];
        assert_eq!(
            price_of(&[], &asks, (40, 0), Some(1000), Reference),
            Some(1000)
        );
        assert_eq!(
            price_of(&[], &asks, (40, 0), Some(1000), LimitNearest),
            Some(998)
        );
    }

    /// Example 4: sell 41@9.98 leaves a sell surplus: the lowest, 9.98.
    #[test]
    fn pure_market_order_example_4() {
        for rule in ReferencePriceRule::ALL {
            assert_eq!(
                price_of(&[], &[(998, 41)], (40, 0), Some(1000), *rule),
                Some(998)
            );
        }
    }

    /// Example 5: sell 40@10.02, above the reference: only 10.02 and up
    /// execute, and 10.02 is the nearest the reference.
    #[test]
    fn pure_market_order_example_5() {
        for rule in ReferencePriceRule::ALL {
            assert_eq!(
                price_of(&[], &[(1002, 40)], (40, 0), Some(1000), *rule),
                Some(1002)
            );
        }
    }

    /// Market to limit order, call phase examples 1 to 3: market-to-limit
    /// orders alone (buy 50, sell 40), then with a sell 10@10.00 or
    /// 5@10.00 against buys of 10 + 10 + 10 at market: all at 10.00.
    #[test]
    fn market_to_limit_examples_1_to_3() {
        for rule in ReferencePriceRule::ALL {
            assert_eq!(price_of(&[], &[], (50, 40), Some(1000), *rule), Some(1000));
            assert_eq!(
                price_of(&[], &[(1000, 10)], (30, 0), Some(1000), *rule),
                Some(1000)
            );
            assert_eq!(
                price_of(&[], &[(1000, 5)], (30, 0), Some(1000), *rule),
                Some(1000)
            );
        }
    }
}

fn rule() -> impl Strategy<Value = ReferencePriceRule> {
    prop::sample::select(ReferencePriceRule::ALL)
}

proptest! {
    #[test]
    fn matches_the_naive_evaluation_of_every_candidate(
        bids in prop::collection::vec((1u64..30, 1u64..50), 0..25),
        asks in prop::collection::vec((1u64..30, 1u64..50), 0..25),
        mb in prop::collection::vec((prop_oneof![Just(u64::MAX), 1u64..30], 1u64..100), 0..4),
        ms in prop::collection::vec((prop_oneof![Just(0u64), 1u64..30], 1u64..100), 0..4),
        reference in prop::option::of(1u64..30),
        rule in rule(),
    ) {
        let fast = uncross(
            &aggregate(&bids, true),
            &aggregate(&asks, false),
            &aggregate(&mb, true),
            &aggregate(&ms, false),
            reference,
            rule,
        );
        prop_assert_eq!(fast, naive(&bids, &asks, &mb, &ms, reference, rule));
    }

    /// The two rules differ only in which of the tied prices wins: with
    /// market orders unbounded (as at both venues), a reference between
    /// two limits or beyond them never executes more than the limit next
    /// to it, so both rules execute the same volume. Under Xetra's rule
    /// the price is a limit price, or the reference when no limit price
    /// executes.
    #[test]
    fn both_rules_execute_the_same_volume(
        bids in prop::collection::vec((1u64..30, 1u64..50), 0..25),
        asks in prop::collection::vec((1u64..30, 1u64..50), 0..25),
        mb in prop::collection::vec((Just(u64::MAX), 1u64..100), 0..4),
        ms in prop::collection::vec((Just(0u64), 1u64..100), 0..4),
        reference in prop::option::of(1u64..30),
    ) {
        let (b, a) = (aggregate(&bids, true), aggregate(&asks, false));
        let (m, n) = (aggregate(&mb, true), aggregate(&ms, false));
        let xetra = uncross(&b, &a, &m, &n, reference, LimitNearest);
        let euronext = uncross(&b, &a, &m, &n, reference, Reference);
        prop_assert_eq!(xetra.map(|u| u.volume), euronext.map(|u| u.volume));
        if let Some(u) = xetra {
            let is_limit = bids.iter().chain(&asks).any(|o| o.0 == u.price);
            prop_assert!(is_limit || Some(u.price) == reference);
            if !is_limit {
                let limits = uncross(&b, &a, &m, &n, None, LimitNearest);
                prop_assert!(limits.is_none());
            }
        }
    }
}
