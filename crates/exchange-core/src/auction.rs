//! The auction price: where a call phase's book uncrosses.
//!
//! Rules, in order (Xetra's auction price determination, which Euronext
//! follows in substance; see docs/market-model.md for worked examples):
//!
//! 1. the price that executes the largest volume;
//! 2. of those, the one leaving the smallest surplus (imbalance);
//! 3. if every remaining price leaves a surplus on the same side, the
//!    highest for a buy surplus and the lowest for a sell surplus (market
//!    pressure);
//! 4. otherwise the one closest to the reference price (the last price, or
//!    the configured reference), the lower on a tie, and the lowest when
//!    there is no reference.
//!
//! Candidates are the limit prices on the book plus the reference price,
//! so that, as at Xetra, the reference itself is the auction price when
//! it ties on the first rules. Market orders count at every price within
//! their bound (see `call_market.rs`), which is their priority.
//!
//! Cost: one merge over the aggregated price levels of the crossing
//! region, `O(levels)`, however many orders each level holds.

/// Aggregated quantity at one price (lots).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LevelQty {
    pub price: u64,
    pub qty: u64,
}

/// The result of an uncrossing, in ticks and lots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Uncross {
    pub price: u64,
    pub volume: u64,
    /// Demand minus supply at `price`: positive is a buy surplus.
    pub surplus: i128,
}

/// Demand and supply at one candidate price.
#[derive(Clone, Copy, Debug)]
struct Point {
    price: u64,
    demand: u128,
    supply: u128,
}

impl Point {
    fn volume(&self) -> u128 {
        self.demand.min(self.supply)
    }

    fn surplus(&self) -> i128 {
        // Both sums are of u64 lot counts over at most a few million
        // orders, far inside i128.
        self.demand as i128 - self.supply as i128
    }
}

/// Picks among candidate points (any order) by the rules above; `None`
/// if nothing executes.
fn choose(points: &[Point], reference: Option<u64>) -> Option<Uncross> {
    let best_volume = points.iter().map(Point::volume).max()?;
    if best_volume == 0 {
        return None;
    }
    let tied: Vec<&Point> = points
        .iter()
        .filter(|p| p.volume() == best_volume)
        .collect();
    let least = tied.iter().map(|p| p.surplus().unsigned_abs()).min()?;
    let mut tied: Vec<&Point> = tied
        .into_iter()
        .filter(|p| p.surplus().unsigned_abs() == least)
        .collect();
    tied.sort_by_key(|p| p.price);
    let (low, high) = (*tied.first()?, *tied.last()?);
    let chosen = if tied.iter().all(|p| p.surplus() > 0) {
        high
    } else if tied.iter().all(|p| p.surplus() < 0) {
        low
    } else if let Some(reference) = reference {
        // Sorted by price, so `min_by_key` keeps the lower of two equally
        // close prices.
        *tied.iter().min_by_key(|p| p.price.abs_diff(reference))?
    } else {
        low
    };
    Some(Uncross {
        price: chosen.price,
        volume: u64::try_from(chosen.volume()).unwrap_or(u64::MAX),
        surplus: chosen.surplus(),
    })
}

/// The uncrossing of a book: `bids` best (highest) first, `asks` best
/// (lowest) first, each price once, plus market orders by their bounds
/// (`market_bids` highest first, `market_asks` lowest first). A market
/// order counts at every candidate price within its bound, but its bound
/// is no candidate: it is a protection, not a price anyone asked for.
pub(crate) fn uncross(
    bids: &[LevelQty],
    asks: &[LevelQty],
    market_bids: &[LevelQty],
    market_asks: &[LevelQty],
    reference: Option<u64>,
) -> Option<Uncross> {
    // Candidate prices ascending: every limit price and the reference.
    let mut prices: Vec<u64> = Vec::with_capacity(bids.len() + asks.len() + 1);
    prices.extend(bids.iter().rev().map(|l| l.price));
    let mut merged = Vec::with_capacity(prices.len() + asks.len() + 1);
    let (mut i, mut j) = (0, 0);
    while i < prices.len() || j < asks.len() {
        let take_bid = j >= asks.len() || (i < prices.len() && prices[i] <= asks[j].price);
        if take_bid {
            merged.push(prices[i]);
            i += 1;
        } else {
            merged.push(asks[j].price);
            j += 1;
        }
    }
    if let Some(r) = reference {
        let at = merged.partition_point(|&p| p < r);
        merged.insert(at, r);
    }
    merged.dedup();
    // Supply at p: asks and market sells at or below p (ascending walk).
    let mut supply = Vec::with_capacity(merged.len());
    let mut sum = 0u128;
    let (mut k, mut m) = (0, 0);
    for &p in &merged {
        while k < asks.len() && asks[k].price <= p {
            sum += u128::from(asks[k].qty);
            k += 1;
        }
        while m < market_asks.len() && market_asks[m].price <= p {
            sum += u128::from(market_asks[m].qty);
            m += 1;
        }
        supply.push(sum);
    }
    // Demand at p: bids and market buys at or above p (descending walk).
    let mut points = Vec::with_capacity(merged.len());
    let mut demand = 0u128;
    let (mut k, mut m) = (0, 0);
    for (index, &p) in merged.iter().enumerate().rev() {
        while k < bids.len() && bids[k].price >= p {
            demand += u128::from(bids[k].qty);
            k += 1;
        }
        while m < market_bids.len() && market_bids[m].price >= p {
            demand += u128::from(market_bids[m].qty);
            m += 1;
        }
        points.push(Point {
            price: p,
            demand,
            supply: supply[index],
        });
    }
    choose(&points, reference)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn l(price: u64, qty: u64) -> LevelQty {
        LevelQty { price, qty }
    }

    /// Every candidate evaluated from the orders themselves.
    /// `mb` and `ms` are market orders as (bound, qty).
    fn naive(
        bids: &[(u64, u64)],
        asks: &[(u64, u64)],
        mb: &[(u64, u64)],
        ms: &[(u64, u64)],
        reference: Option<u64>,
    ) -> Option<Uncross> {
        let mut candidates: Vec<u64> = bids.iter().chain(asks).map(|o| o.0).collect();
        candidates.extend(reference);
        candidates.sort_unstable();
        candidates.dedup();
        let points: Vec<Point> = candidates
            .into_iter()
            .map(|p| Point {
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
            })
            .collect();
        choose(&points, reference)
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

    #[test]
    fn maximum_volume_wins() {
        // Bids 100@10, 50@11; asks 80@9, 60@10. At 10: demand 150,
        // supply 140 -> 140; at 11: demand 50; at 9: supply 80.
        let u = uncross(
            &[l(11, 50), l(10, 100)],
            &[l(9, 80), l(10, 60)],
            &[],
            &[],
            None,
        );
        assert_eq!(
            u,
            Some(Uncross {
                price: 10,
                volume: 140,
                surplus: 10
            })
        );
    }

    #[test]
    fn buy_pressure_takes_the_highest_price() {
        // 10 and 11 both execute 100 with a buy surplus of 20.
        let u = uncross(&[l(11, 120)], &[l(10, 100)], &[], &[], None).map(|u| u.price);
        assert_eq!(u, Some(11));
    }

    #[test]
    fn sell_pressure_takes_the_lowest_price() {
        let u = uncross(&[l(11, 100)], &[l(10, 120)], &[], &[], None).map(|u| u.price);
        assert_eq!(u, Some(10));
    }

    #[test]
    fn balanced_book_takes_the_reference_within_the_range() {
        let book = (&[l(12, 100)][..], &[l(8, 100)][..]);
        assert_eq!(
            uncross(book.0, book.1, &[], &[], Some(10)).map(|u| u.price),
            Some(10)
        );
        assert_eq!(
            uncross(book.0, book.1, &[], &[], Some(20)).map(|u| u.price),
            Some(12)
        );
        assert_eq!(
            uncross(book.0, book.1, &[], &[], Some(3)).map(|u| u.price),
            Some(8)
        );
        assert_eq!(
            uncross(book.0, book.1, &[], &[], None).map(|u| u.price),
            Some(8)
        );
    }

    #[test]
    fn nothing_crosses_nothing_executes() {
        assert_eq!(uncross(&[l(9, 10)], &[l(10, 10)], &[], &[], Some(9)), None);
        assert_eq!(uncross(&[], &[l(10, 10)], &[], &[], None), None);
    }

    #[test]
    fn market_orders_count_at_every_price() {
        // A market buy of 30 against asks 20@10 and 20@11: 11 executes 30.
        let u = uncross(&[], &[l(10, 20), l(11, 20)], &[l(u64::MAX, 30)], &[], None);
        assert_eq!(u.map(|u| (u.price, u.volume)), Some((11, 30)));
    }

    #[test]
    fn a_market_buy_counts_only_up_to_its_bound() {
        // Bounded at 10, the market buy of 30 cannot take the ask at 11:
        // 10 executes 20, and 11 executes nothing.
        let u = uncross(&[], &[l(10, 20), l(11, 20)], &[l(10, 30)], &[], None);
        assert_eq!(u.map(|u| (u.price, u.volume)), Some((10, 20)));
        // Its bound is no candidate: against one ask at 10 the price is 10
        // even with a buy surplus, not the bound 15.
        let u = uncross(&[], &[l(10, 20)], &[l(15, 30)], &[], None);
        assert_eq!(u.map(|u| (u.price, u.volume)), Some((10, 20)));
    }

    proptest! {
        #[test]
        fn matches_the_naive_evaluation_of_every_candidate(
            bids in prop::collection::vec((1u64..30, 1u64..50), 0..25),
            asks in prop::collection::vec((1u64..30, 1u64..50), 0..25),
            mb in prop::collection::vec((prop_oneof![Just(u64::MAX), 1u64..30], 1u64..100), 0..4),
            ms in prop::collection::vec((prop_oneof![Just(0u64), 1u64..30], 1u64..100), 0..4),
            reference in prop::option::of(1u64..30),
        ) {
            let fast = uncross(
                &aggregate(&bids, true),
                &aggregate(&asks, false),
                &aggregate(&mb, true),
                &aggregate(&ms, false),
                reference,
            );
            prop_assert_eq!(fast, naive(&bids, &asks, &mb, &ms, reference));
        }
    }
}
