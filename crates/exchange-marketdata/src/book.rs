//! Aggregated (L2) books as market data sees them: price → total quantity
//! per side, in units. Kept by the projection from the core's `Book`
//! events, and by the rebuilders from the feeds.

use std::collections::BTreeMap;

use exchange_core::BookView;
use exchange_types::Side;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct L2Book {
    bids: BTreeMap<u64, u64>,
    asks: BTreeMap<u64, u64>,
}

impl L2Book {
    /// A book from levels in any order.
    pub fn from_view(view: &BookView) -> L2Book {
        L2Book {
            bids: view.bids.iter().copied().collect(),
            asks: view.asks.iter().copied().collect(),
        }
    }

    fn side_mut(&mut self, side: Side) -> &mut BTreeMap<u64, u64> {
        match side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        }
    }

    /// Sets the absolute quantity at a level; zero removes it.
    pub fn set(&mut self, side: Side, price: u64, qty: u64) {
        let levels = self.side_mut(side);
        if qty == 0 {
            levels.remove(&price);
        } else {
            levels.insert(price, qty);
        }
    }

    pub fn clear(&mut self) {
        self.bids.clear();
        self.asks.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.bids.is_empty() && self.asks.is_empty()
    }

    pub fn best_bid(&self) -> Option<(u64, u64)> {
        self.bids.last_key_value().map(|(&p, &q)| (p, q))
    }

    pub fn best_ask(&self) -> Option<(u64, u64)> {
        self.asks.first_key_value().map(|(&p, &q)| (p, q))
    }

    /// One side's levels, best first.
    pub fn levels(&self, side: Side) -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
        match side {
            Side::Buy => Box::new(self.bids.iter().rev().map(|(&p, &q)| (p, q))),
            Side::Sell => Box::new(self.asks.iter().map(|(&p, &q)| (p, q))),
        }
    }

    pub fn level_count(&self, side: Side) -> usize {
        match side {
            Side::Buy => self.bids.len(),
            Side::Sell => self.asks.len(),
        }
    }

    /// Up to `depth` levels per side, best first: the core's view shape.
    pub fn view(&self, depth: usize) -> BookView {
        BookView {
            bids: self.levels(Side::Buy).take(depth).collect(),
            asks: self.levels(Side::Sell).take(depth).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_best_first_and_zero_removes() {
        let mut book = L2Book::default();
        book.set(Side::Buy, 99, 1);
        book.set(Side::Buy, 100, 2);
        book.set(Side::Sell, 102, 3);
        book.set(Side::Sell, 101, 4);
        assert_eq!(book.best_bid(), Some((100, 2)));
        assert_eq!(book.best_ask(), Some((101, 4)));
        assert_eq!(
            book.view(10),
            BookView {
                bids: vec![(100, 2), (99, 1)],
                asks: vec![(101, 4), (102, 3)],
            }
        );
        book.set(Side::Buy, 100, 0);
        assert_eq!(book.view(1).bids, vec![(99, 1)]);
        assert_eq!(L2Book::from_view(&book.view(usize::MAX)), book);
    }
}
