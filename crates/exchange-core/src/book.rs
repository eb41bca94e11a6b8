//! Limit order books: price levels with FIFO queues.
//!
//! Each side keeps its levels in one vector sorted by a key that puts the
//! best price last (`price` for bids, `!price` for asks). Trading happens
//! almost entirely at the best levels, so taking the best level is `O(1)`,
//! inserting or removing a level near the top moves a handful of entries,
//! and finding any level is a binary search over contiguous memory. Within
//! a level, orders form an intrusive FIFO list in the order pool.
//!
//! Invariant: a level exists iff its queue is non-empty, and its `qty` is
//! the sum of its orders' open quantities.

use exchange_types::Side;

use crate::orders::{OrderPool, NIL};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Level {
    key: u64,
    pub price: u64,
    pub qty: u64,
    pub head: u32,
    pub tail: u32,
}

#[derive(Clone, Debug)]
pub(crate) struct BookSide {
    side: Side,
    levels: Vec<Level>,
}

impl BookSide {
    pub fn new(side: Side) -> Self {
        BookSide {
            side,
            levels: Vec::new(),
        }
    }

    #[inline]
    fn key(&self, price: u64) -> u64 {
        match self.side {
            Side::Buy => price,
            Side::Sell => !price,
        }
    }

    #[inline]
    fn find(&self, price: u64) -> Result<usize, usize> {
        let key = self.key(price);
        // Most lookups are near the best price, at the end.
        match self.levels.last() {
            Some(last) if last.key == key => Ok(self.levels.len() - 1),
            Some(last) if last.key < key => Err(self.levels.len()),
            _ => self.levels.binary_search_by_key(&key, |level| level.key),
        }
    }

    pub fn side(&self) -> Side {
        self.side
    }

    pub fn level_count(&self) -> usize {
        self.levels.len()
    }

    pub fn has_level(&self, price: u64) -> bool {
        self.find(price).is_ok()
    }

    #[inline]
    pub fn best(&self) -> Option<&Level> {
        self.levels.last()
    }

    #[inline]
    pub fn best_mut(&mut self) -> Option<&mut Level> {
        self.levels.last_mut()
    }

    /// Levels from the best price outwards.
    pub fn levels_best_first(&self) -> impl Iterator<Item = &Level> {
        self.levels.iter().rev()
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
        let index = match self.find(price) {
            Ok(index) => index,
            Err(index) => {
                let key = self.key(price);
                self.levels.insert(
                    index,
                    Level {
                        key,
                        price,
                        qty: 0,
                        head: NIL,
                        tail: NIL,
                    },
                );
                index
            }
        };
        let level = &mut self.levels[index];
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
        let Ok(index) = self.find(price) else {
            debug_assert!(false, "resting order without a level");
            return 0;
        };
        if prev == NIL {
            self.levels[index].head = next;
        } else {
            pool.get_mut(prev).next = next;
        }
        if next == NIL {
            self.levels[index].tail = prev;
        } else {
            pool.get_mut(next).prev = prev;
        }
        let order = pool.get_mut(slot);
        order.prev = NIL;
        order.next = NIL;
        let level = &mut self.levels[index];
        level.qty -= leaves;
        let remaining = level.qty;
        if level.head == NIL {
            self.levels.remove(index);
        }
        remaining
    }

    /// Lowers the aggregate at `price` by `lots` without touching the queue
    /// (the order itself shrank in place) and returns the new aggregate.
    pub fn reduce(&mut self, price: u64, lots: u64) -> u64 {
        match self.find(price) {
            Ok(index) => {
                self.levels[index].qty -= lots;
                self.levels[index].qty
            }
            Err(_) => {
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
