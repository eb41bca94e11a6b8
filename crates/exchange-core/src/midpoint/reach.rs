//! The midpoints at which a midpoint book can trade at all.
//!
//! A buy and a sell trade at midpoint `m` when the buy's price (its limit,
//! or an unlimited one's bound) is at least `m`, the sell's at most `m`,
//! and a trade of the smaller remainder meets both minimums. The last
//! does not depend on `m`, so each pair that meets the minimums trades at
//! every midpoint from the sell's price to the buy's, and the midpoints at
//! which anything trades are a union of such intervals: per buy, from the
//! lowest price of a sell it meets the minimums with, up to its own price.
//!
//! Matching keeps the union up to date as orders come, go and fill
//! ([`pairs`](super::pairs)); [`reach`] works it out from scratch, for the
//! audit and the tests to hold the kept one to. It is a sweep: sells by
//! their minimum, buys by their remainder, and a tree giving the lowest
//! sell price among the sells large enough, in O((B + S) log S) for B
//! buys and S sells.

/// What decides whether an order meets another's minimum, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Offer {
    /// Its limit, or an unlimited order's bound, in ticks.
    pub price: u64,
    /// Open lots.
    pub leaves: u64,
    /// Lots the other order must trade at the least: the order's minimum,
    /// or its remainder when that is smaller.
    pub least: u64,
}

impl Offer {
    pub fn new(price: u64, leaves: u64, min_lots: Option<u64>) -> Offer {
        Offer {
            price,
            leaves,
            least: min_lots.unwrap_or(0).min(leaves),
        }
    }
}

/// Whether a trade of the smaller remainder meets both minimums: the sell
/// is at least the buy's least, and the buy at least the sell's.
pub(crate) fn minimums_met(buy: &Offer, sell: &Offer) -> bool {
    sell.leaves >= buy.least && buy.leaves >= sell.least
}

/// The sorted, disjoint, non-adjacent intervals of midpoints (in ticks,
/// both ends included) at which some buy and some sell may trade.
pub(crate) fn reach(buys: &[Offer], sells: &[Offer]) -> Vec<(u64, u64)> {
    let mut by_least: Vec<&Offer> = sells.iter().collect();
    by_least.sort_unstable_by_key(|s| s.least);
    let mut sizes: Vec<u64> = sells.iter().map(|s| s.leaves).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut by_leaves: Vec<&Offer> = buys.iter().collect();
    by_leaves.sort_unstable_by_key(|b| b.leaves);

    // Sizes are indexed from the largest, so that "at least this large"
    // is a prefix of the tree.
    let mut lowest = MinTree::new(sizes.len());
    let mut spans = Vec::with_capacity(buys.len());
    let mut added = 0;
    for buy in by_leaves {
        // Every sell whose least the buy's remainder meets is in the tree.
        while let Some(sell) = by_least.get(added).filter(|s| s.least <= buy.leaves) {
            let index = sizes.partition_point(|&size| size < sell.leaves);
            lowest.lower(sizes.len() - 1 - index, sell.price);
            added += 1;
        }
        let large_enough = sizes.partition_point(|&size| size < buy.least);
        if large_enough == sizes.len() {
            continue;
        }
        let low = lowest.least_up_to(sizes.len() - 1 - large_enough);
        if low <= buy.price {
            spans.push((low, buy.price));
        }
    }
    merge(spans)
}

/// Whether `mid` is in one of `spans` (as [`reach`] returns them).
#[cfg(test)]
fn covers(spans: &[(u64, u64)], mid: u64) -> bool {
    let after = spans.partition_point(|&(low, _)| low <= mid);
    after > 0 && spans[after - 1].1 >= mid
}

fn merge(mut spans: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(spans.len());
    for (low, high) in spans {
        match merged.last_mut() {
            Some(last) if low <= last.1.saturating_add(1) => last.1 = last.1.max(high),
            _ => merged.push((low, high)),
        }
    }
    merged
}

/// A Fenwick tree of minimums: lower a position's value, ask for the
/// least value among the positions up to one.
struct MinTree(Vec<u64>);

impl MinTree {
    fn new(len: usize) -> MinTree {
        MinTree(vec![u64::MAX; len + 1])
    }

    fn lower(&mut self, at: usize, value: u64) {
        let mut node = at + 1;
        while let Some(slot) = self.0.get_mut(node) {
            *slot = (*slot).min(value);
            node += node & node.wrapping_neg();
        }
    }

    fn least_up_to(&self, at: usize) -> u64 {
        let (mut node, mut least) = (at + 1, u64::MAX);
        while node > 0 {
            least = least.min(self.0[node]);
            node -= node & node.wrapping_neg();
        }
        least
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every midpoint from 0 to `top` at which some pair may trade, pair
    /// by pair, with the minimums as the rule states them: the smaller
    /// remainder is at least each order's minimum (or its remainder).
    fn by_every_pair(buys: &[Offer], sells: &[Offer], top: u64) -> Vec<u64> {
        let trades = |b: &Offer, s: &Offer, mid: u64| {
            let lots = b.leaves.min(s.leaves);
            b.price >= mid && s.price <= mid && lots >= b.least && lots >= s.least
        };
        (0..=top)
            .filter(|&mid| buys.iter().any(|b| sells.iter().any(|s| trades(b, s, mid))))
            .collect()
    }

    fn offer() -> impl Strategy<Value = Offer> {
        (0..40u64, 1..12u64, proptest::option::of(0..14u64))
            .prop_map(|(price, leaves, min)| Offer::new(price, leaves, min))
    }

    proptest! {
        #[test]
        fn the_reach_is_where_some_pair_trades(
            buys in proptest::collection::vec(offer(), 0..12),
            sells in proptest::collection::vec(offer(), 0..12),
        ) {
            let spans = reach(&buys, &sells);
            for pair in spans.windows(2) {
                prop_assert!(pair[0].1.saturating_add(1) < pair[1].0, "{spans:?}");
            }
            let covered: Vec<u64> = (0..=45).filter(|&mid| covers(&spans, mid)).collect();
            prop_assert_eq!(covered, by_every_pair(&buys, &sells, 45));
        }
    }

    #[test]
    fn a_minimum_keeps_a_pair_apart_until_the_other_is_large_enough() {
        let buy = Offer::new(10, 5, Some(5));
        assert_eq!(reach(&[buy], &[Offer::new(8, 4, None)]), []);
        assert_eq!(reach(&[buy], &[Offer::new(8, 5, None)]), [(8, 10)]);
        // The sell's minimum above the buy's remainder: no pair.
        assert_eq!(reach(&[buy], &[Offer::new(8, 9, Some(6))]), []);
        // A minimum above the order's own remainder asks for the remainder.
        assert_eq!(
            reach(&[Offer::new(10, 3, Some(7))], &[Offer::new(8, 3, None)]),
            [(8, 10)]
        );
        assert!(covers(&[(8, 10), (14, 15)], 15) && !covers(&[(8, 10), (14, 15)], 11));
    }
}
