//! The auction price: where a call phase's book uncrosses.
//!
//! Rules, in order (Xetra's auction price determination, which Euronext
//! follows but for the last; see docs/market-model.md for worked
//! examples):
//!
//! 1. the price that executes the largest volume;
//! 2. of those, the one leaving the smallest surplus (imbalance);
//! 3. if every remaining price leaves a surplus on the same side, the
//!    highest for a buy surplus and the lowest for a sell surplus (market
//!    pressure);
//! 4. otherwise the reference price (the last price, or the configured
//!    reference) decides, by the instrument's [`ReferencePriceRule`]:
//!    - `LimitNearest` (Xetra): candidates are the limit prices alone, and
//!      the one nearest the reference wins, the higher of two equally
//!      near; when only market orders execute, the reference is the price;
//!    - `Reference` (Euronext): the reference is a candidate itself, so it
//!      is the price when it ties on the first rules; otherwise the
//!      candidate nearest it, the lower of two equally near.
//!
//!    Without a reference, the lowest.
//!
//! Market orders count at every price within their bound (see
//! `call_market.rs`), which is their priority. Their bounds are candidates
//! only where one executes strictly more than every limit price (two
//! bounded market orders crossing between two limits), so that rule 1
//! holds over every price the orders allow.
//!
//! Cost: one merge over the aggregated price levels of the crossing
//! region, `O(levels)`, however many orders each level holds.

use std::cmp::Reverse;

use exchange_types::ReferencePriceRule;

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
fn choose(points: &[Point], reference: Option<u64>, rule: ReferencePriceRule) -> Option<Uncross> {
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
        // Sorted by price, so `min_by_key` keeps the first of two equally
        // near prices: the lower, or with `Reverse`, the higher.
        let distance = |p: &&&Point| p.price.abs_diff(reference);
        match rule {
            ReferencePriceRule::Reference => *tied.iter().min_by_key(distance)?,
            ReferencePriceRule::LimitNearest => *tied
                .iter()
                .min_by_key(|p| (distance(p), Reverse(p.price)))?,
        }
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
/// is a candidate only when it executes more than every limit price: it
/// is a protection, not a price anyone asked for.
pub(crate) fn uncross(
    bids: &[LevelQty],
    asks: &[LevelQty],
    market_bids: &[LevelQty],
    market_asks: &[LevelQty],
    reference: Option<u64>,
    rule: ReferencePriceRule,
) -> Option<Uncross> {
    let candidate_reference = match rule {
        ReferencePriceRule::Reference => reference,
        ReferencePriceRule::LimitNearest => None,
    };
    let prices = candidates(bids, asks, candidate_reference);
    let book = Crossing {
        bids,
        asks,
        market_bids,
        market_asks,
    };
    let points = book.evaluate(&prices);
    let chosen = choose(&points, reference, rule);
    let chosen = match (chosen, rule, reference) {
        // No limit price executes, yet market orders may cross each
        // other: Xetra then takes the reference price.
        (None, ReferencePriceRule::LimitNearest, Some(r)) => {
            let at = book.evaluate(&[r]);
            choose(&at, reference, rule)
        }
        (chosen, _, _) => chosen,
    };
    book.with_bounds_if_they_execute_more(chosen, &prices, reference, rule)
}

/// Candidate prices ascending: every limit price, and `extra` if given.
fn candidates(bids: &[LevelQty], asks: &[LevelQty], extra: Option<u64>) -> Vec<u64> {
    let mut merged = Vec::with_capacity(bids.len() + asks.len() + 1);
    let (mut i, mut j) = (bids.len(), 0);
    // Bids are highest first: walked from their end, they ascend.
    while i > 0 || j < asks.len() {
        let take_bid = j >= asks.len() || (i > 0 && bids[i - 1].price <= asks[j].price);
        if take_bid {
            merged.push(bids[i - 1].price);
            i -= 1;
        } else {
            merged.push(asks[j].price);
            j += 1;
        }
    }
    if let Some(r) = extra {
        let at = merged.partition_point(|&p| p < r);
        merged.insert(at, r);
    }
    merged.dedup();
    merged
}

/// The orders an uncrossing weighs: limit levels (bids highest first,
/// asks lowest first) and market orders by their bounds.
#[derive(Clone, Copy)]
struct Crossing<'a> {
    bids: &'a [LevelQty],
    asks: &'a [LevelQty],
    market_bids: &'a [LevelQty],
    market_asks: &'a [LevelQty],
}

impl Crossing<'_> {
    /// Rule 1 asks for the largest volume the orders allow. Bounded market
    /// orders can cross each other between two limit prices (a sell bounded
    /// at 99, a buy at 101, limits at 95 and 102), where no limit price
    /// executes them: their bounds then become candidates, but only when one
    /// executes strictly more than every limit price, so a book whose limit
    /// prices execute the most (every venue example, where market orders
    /// have no bound) keeps its price. Otherwise those market orders would
    /// trade against each other the moment continuous trading began. An
    /// unbounded order's sentinel (0 for a sell, `u64::MAX` for a buy) is no
    /// price and never a candidate.
    fn with_bounds_if_they_execute_more(
        &self,
        chosen: Option<Uncross>,
        prices: &[u64],
        reference: Option<u64>,
        rule: ReferencePriceRule,
    ) -> Option<Uncross> {
        let (market_bids, market_asks) = (self.market_bids, self.market_asks);
        // One side's market orders alone meet only limit orders, whose
        // prices are candidates already. Without a reference nothing bounds a
        // market sell (a bound needs a collar or band around a price), and a
        // market buy bounded by its funds alone names no price to trade at.
        if market_bids.is_empty() || market_asks.is_empty() || reference.is_none() {
            return chosen;
        }
        let extra: Vec<u64> = candidates(market_bids, market_asks, None)
            .into_iter()
            .filter(|&b| b != 0 && b != u64::MAX && prices.binary_search(&b).is_err())
            .collect();
        if extra.is_empty() {
            return chosen;
        }
        let mut all: Vec<u64> = prices.iter().copied().chain(extra).collect();
        all.extend(chosen.map(|u| u.price));
        all.sort_unstable();
        all.dedup();
        let points = self.evaluate(&all);
        match (choose(&points, reference, rule), chosen) {
            (Some(wider), Some(limits)) if wider.volume > limits.volume => Some(wider),
            (Some(wider), None) => Some(wider),
            (_, limits) => limits,
        }
    }

    /// Demand and supply at each of `prices` (ascending).
    fn evaluate(&self, prices: &[u64]) -> Vec<Point> {
        let Crossing {
            bids,
            asks,
            market_bids,
            market_asks,
        } = *self;
        // Supply at p: asks and market sells at or below p (ascending walk).
        let mut supply = Vec::with_capacity(prices.len());
        let mut sum = 0u128;
        let (mut k, mut m) = (0, 0);
        for &p in prices {
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
        let mut points = Vec::with_capacity(prices.len());
        let mut demand = 0u128;
        let (mut k, mut m) = (0, 0);
        for (index, &p) in prices.iter().enumerate().rev() {
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
        points
    }
}

#[cfg(test)]
#[path = "auction_tests.rs"]
mod tests;
