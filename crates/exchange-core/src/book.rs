//! Limit order books: price levels with FIFO queues.
//!
//! Each side keeps its levels in a `BTreeMap` under a key that orders the
//! best price last (`price` for bids, `!price` for asks). Finding, adding
//! or removing any level is `O(log n)` with a small constant and no
//! shifting, wherever in the book it is: a sorted vector made the best
//! level `O(1)` but cost a memmove of everything above a level that
//! appeared or vanished deep in the book, which dominated the tail (see
//! BENCHMARKS.md). Within a level, orders form an intrusive FIFO list in the
//! order pool.
//!
//! Invariant: a level exists iff its queue is non-empty, and its `qty` is
//! the sum of its orders' open quantities.

use std::collections::BTreeMap;

use exchange_types::Side;

use crate::orders::{OrderPool, NIL};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Level {
    pub price: u64,
    pub qty: u64,
    pub head: u32,
    pub tail: u32,
}

#[derive(Clone, Debug)]
pub(crate) struct BookSide {
    side: Side,
    levels: BTreeMap<u64, Level>,
}

impl BookSide {
    pub fn new(side: Side) -> Self {
        BookSide {
            side,
            levels: BTreeMap::new(),
        }
    }

    #[inline]
    fn key(&self, price: u64) -> u64 {
        match self.side {
            Side::Buy => price,
            Side::Sell => !price,
        }
    }

    pub fn side(&self) -> Side {
        self.side
    }

    pub fn level_count(&self) -> usize {
        self.levels.len()
    }

    pub fn has_level(&self, price: u64) -> bool {
        self.levels.contains_key(&self.key(price))
    }

    #[inline]
    pub fn best(&self) -> Option<&Level> {
        self.levels.values().next_back()
    }

    #[inline]
    pub fn best_mut(&mut self) -> Option<&mut Level> {
        self.levels.values_mut().next_back()
    }

    /// Levels from the best price outwards.
    pub fn levels_best_first(&self) -> impl Iterator<Item = &Level> {
        self.levels.values().rev()
    }

    /// Whether `price` on the opposite side would trade with this side.
    #[inline]
    pub fn crosses(&self, incoming_price: u64) -> bool {
        match self.best() {
            None => false,
            Some(best) => match self.side {
                // Incoming sell against bids.
                Side::Buy => incoming_price <= best.price,
                // Incoming buy against asks.
                Side::Sell => incoming_price >= best.price,
            },
        }
    }

    /// Appends the order in `slot` to the back of its price level and
    /// returns the level's new aggregate quantity.
    pub fn push_back(&mut self, pool: &mut OrderPool, slot: u32) -> u64 {
        let (price, leaves) = {
            let order = pool.get(slot);
            (order.price, order.leaves())
        };
        let key = self.key(price);
        let level = self.levels.entry(key).or_insert(Level {
            price,
            qty: 0,
            head: NIL,
            tail: NIL,
        });
        let old_tail = level.tail;
        {
            let order = pool.get_mut(slot);
            order.prev = old_tail;
            order.next = NIL;
        }
        if old_tail == NIL {
            level.head = slot;
        } else {
            pool.get_mut(old_tail).next = slot;
        }
        level.tail = slot;
        level.qty += leaves;
        level.qty
    }

    /// Takes the order in `slot` out of its level (with its open quantity)
    /// and returns the level's new aggregate quantity; an emptied level is
    /// removed.
    pub fn unlink(&mut self, pool: &mut OrderPool, slot: u32) -> u64 {
        let (price, leaves, prev, next) = {
            let order = pool.get(slot);
            (order.price, order.leaves(), order.prev, order.next)
        };
        let key = self.key(price);
        let Some(level) = self.levels.get_mut(&key) else {
            debug_assert!(false, "resting order without a level");
            return 0;
        };
        if prev == NIL {
            level.head = next;
        } else {
            pool.get_mut(prev).next = next;
        }
        if next == NIL {
            level.tail = prev;
        } else {
            pool.get_mut(next).prev = prev;
        }
        let order = pool.get_mut(slot);
        order.prev = NIL;
        order.next = NIL;
        level.qty -= leaves;
        let remaining = level.qty;
        if level.head == NIL {
            self.levels.remove(&key);
        }
        remaining
    }

    /// Lowers the aggregate at `price` by `lots` without touching the queue
    /// (the order itself shrank in place) and returns the new aggregate.
    pub fn reduce(&mut self, price: u64, lots: u64) -> u64 {
        let key = self.key(price);
        match self.levels.get_mut(&key) {
            Some(level) => {
                level.qty -= lots;
                level.qty
            }
            None => {
                debug_assert!(false, "reducing a missing level");
                0
            }
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Book {
    pub bids: BookSide,
    pub asks: BookSide,
}

impl Book {
    pub fn new() -> Self {
        Book {
            bids: BookSide::new(Side::Buy),
            asks: BookSide::new(Side::Sell),
        }
    }

    pub fn side(&self, side: Side) -> &BookSide {
        match side {
            Side::Buy => &self.bids,
            Side::Sell => &self.asks,
        }
    }

    pub fn side_mut(&mut self, side: Side) -> &mut BookSide {
        match side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        }
    }
}
