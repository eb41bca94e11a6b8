//! Limit order books: price levels with FIFO queues.
//!
//! A side is a price ladder. Prices map to keys that grow away from the
//! best (`!price` for bids, `price` for asks), so the best level is always
//! the smallest key. A window of at most [`WINDOW`] consecutive keys is
//! direct-mapped: a level there is an array slot (its key modulo
//! `WINDOW`), and a two-level bitmap (one summary word over 64 words)
//! finds the first non-empty slot with two `trailing_zeros`. Levels
//! outside the window live in a `BTreeMap`, so correctness never depends
//! on where the window is; only speed does. The best key is cached.
//!
//! Where the window goes: it is allocated with a side's first order (a side
//! that never held one costs a pointer; one that did, 96 KiB) and placed so
//! that this price has a quarter of the window on its better side and three
//! quarters behind it, where the depth of a book is. Whenever the window
//! holds no level and an order arrives outside it, it is sent around that
//! order. And it follows the market: once half as many orders have been
//! added outside the window since it was placed as the side has levels
//! (and at least [`MIN_STRAYS`]), it is sent around the best, unless the
//! best is already in the first half of where it is going.
//!
//! How it moves: never at once, which would move every level it holds to
//! the overflow in one command (up to `WINDOW` levels, each a `BTreeMap`
//! insertion). Each later addition to the side takes it one step, moving
//! at most `STEP` levels plus the rest of a 64-key word (see
//! `book_window.rs`): microseconds per command. A whole move is at most
//! `2 * WINDOW` levels, `O(n log n)`, paid for by the `n / 2` `O(log n)`
//! additions that asked for it and done within `2 * WINDOW / STEP + 1`
//! additions, so no pattern of orders can make it thrash or lag behind.
//!
//! Cost: in the window, adding, finding and removing a level is `O(1)`;
//! outside it, `O(log n)`. The best level is `O(1)` while it is in the
//! window. Iterating best first merges the overflow before the window, the
//! window, and the overflow behind it, which is already key order. Within
//! a level, orders form an intrusive FIFO list in the order pool.
//!
//! Invariants: a level exists iff its queue is non-empty, and its `qty` is
//! the sum of its orders' open quantities. The window holds one run of
//! consecutive keys, `lo..hi`, word-aligned and at most `WINDOW` long,
//! also while it moves: a key in that run is only ever stored in the
//! window, a key outside it only in the overflow. `len` counts both, and
//! `best_key` is their smallest key whenever `len > 0`.

use std::collections::BTreeMap;

use exchange_types::Side;

use crate::orders::{Link, OrderPool, NIL};
use window::{placement, Window, WINDOW};

#[path = "book_window.rs"]
mod window;

/// Orders added outside the window before it may follow the best, however
/// few levels the side has: moving it is not free.
const MIN_STRAYS: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Level {
    pub price: u64,
    pub qty: u64,
    pub head: u32,
    pub tail: u32,
}

impl Level {
    fn empty(price: u64) -> Self {
        Level {
            price,
            qty: 0,
            head: NIL,
            tail: NIL,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct BookSide {
    side: Side,
    len: usize,
    best_key: u64,
    window: Option<Box<Window>>,
    overflow: BTreeMap<u64, Level>,
    /// Orders added outside the window since it was last placed.
    strays: usize,
}

impl BookSide {
    pub const fn new(side: Side) -> Self {
        BookSide {
            side,
            len: 0,
            best_key: 0,
            window: None,
            overflow: BTreeMap::new(),
            strays: 0,
        }
    }

    #[inline]
    fn key(&self, price: u64) -> u64 {
        match self.side {
            Side::Buy => !price,
            Side::Sell => price,
        }
    }

    pub fn side(&self) -> Side {
        self.side
    }

    pub fn level_count(&self) -> usize {
        self.len
    }

    pub fn has_level(&self, price: u64) -> bool {
        let key = self.key(price);
        match self.window.as_ref().and_then(|w| Some((w, w.slot(key)?))) {
            Some((window, s)) => window.occupied(s),
            None => self.overflow.contains_key(&key),
        }
    }

    #[inline]
    pub fn best(&self) -> Option<&Level> {
        if self.len == 0 {
            return None;
        }
        if let Some(window) = &self.window {
            if let Some(s) = window.slot(self.best_key) {
                return window.level(s);
            }
        }
        self.overflow.get(&self.best_key)
    }

    /// Lowers the best level's aggregate by `lots` that filled from its
    /// front, and returns the new aggregate (the level stays, even at
    /// zero, until its last order is unlinked). A missing level or a
    /// smaller aggregate is a broken book: publishing from it would be
    /// wrong from here on.
    #[inline]
    pub fn fill_best(&mut self, lots: u64) -> u64 {
        let level = self.best_mut().expect("a filled side has a best level");
        level.qty = level.qty.checked_sub(lots).unwrap_or_else(|| {
            panic!(
                "the best level at {} holds less than a fill of {lots}",
                level.price
            )
        });
        level.qty
    }

    /// The best level, to change by hand: for tests that break the book
    /// on purpose.
    #[cfg(test)]
    pub fn best_level_mut(&mut self) -> Option<&mut Level> {
        self.best_mut()
    }

    #[inline]
    fn best_mut(&mut self) -> Option<&mut Level> {
        if self.len == 0 {
            return None;
        }
        let key = self.best_key;
        self.level_mut(key)
    }

    /// Levels from the best price outwards.
    pub fn levels_best_first(&self) -> impl Iterator<Item = &Level> {
        let (start, end, window) = match &self.window {
            Some(w) => (w.lo(), w.hi(), Some(w.as_ref())),
            // Without a window the overflow is empty too.
            None => (u64::MAX, u64::MAX, None),
        };
        let ahead = self.overflow.range(..start).map(|(_, level)| level);
        let behind = self.overflow.range(end..).map(|(_, level)| level);
        let window = window.into_iter().flat_map(Window::levels);
        ahead.chain(window).chain(behind)
    }

    /// Whether `price` on the opposite side would trade with this side.
    /// Read from the cached best key, whose level need not be loaded.
    #[inline]
    pub fn crosses(&self, incoming_price: u64) -> bool {
        self.len > 0
            && match self.side {
                // Incoming sell against bids (keyed `!price`).
                Side::Buy => incoming_price <= !self.best_key,
                // Incoming buy against asks.
                Side::Sell => incoming_price >= self.best_key,
            }
    }

    #[inline]
    fn level_mut(&mut self, key: u64) -> Option<&mut Level> {
        if let Some(window) = &mut self.window {
            if let Some(s) = window.slot(key) {
                return if window.occupied(s) {
                    window.level_mut(s)
                } else {
                    None
                };
            }
        }
        self.overflow.get_mut(&key)
    }

    /// The level at `price`, created empty if there is none. Inlined: a
    /// new order or a move nearly always lands in a window that is not
    /// moving, which needs no steering, and the call was a sixth of the
    /// work.
    #[inline(always)]
    fn level_or_insert(&mut self, price: u64) -> &mut Level {
        let key = self.key(price);
        let still = self
            .window
            .as_deref()
            .is_some_and(|w| !w.moving() && w.slot(key).is_some());
        if !still {
            self.steer_window(key);
        }
        let becomes_best = self.len == 0 || key < self.best_key;
        if let Some(window) = self.window.as_deref_mut() {
            if let Some(s) = window.slot(key) {
                if !window.occupied(s) {
                    self.len += 1;
                    if becomes_best {
                        self.best_key = key;
                    }
                    return window.fill(s, Level::empty(price));
                }
                return window
                    .level_mut(s)
                    .expect("a slot in the window's range exists");
            }
        }
        let (len, best_key) = (&mut self.len, &mut self.best_key);
        self.overflow.entry(key).or_insert_with(|| {
            *len += 1;
            if becomes_best {
                *best_key = key;
            }
            Level::empty(price)
        })
    }

    /// Before an addition at `key` outside a still window: creates the
    /// window, sends it where the side's orders now go, and takes a
    /// moving one a step on.
    #[inline(never)]
    fn steer_window(&mut self, key: u64) {
        let window = self
            .window
            .get_or_insert_with(|| Box::new(Window::new(key)));
        if window.slot(key).is_none() {
            if window.count == 0 {
                // Nothing to move out: the window goes to the order.
                window.head_for(placement(key));
                self.strays = 0;
            } else {
                self.strays += 1;
                if self.strays >= (self.len / 2).max(MIN_STRAYS) {
                    // Enough work has gone outside the window to pay for
                    // moving every level once: send it to the best (the
                    // window holds a level, so `best_key` is valid).
                    self.strays = 0;
                    let best = key.min(self.best_key);
                    let lead = best.wrapping_sub(window.destination());
                    if lead >= WINDOW as u64 / 2 {
                        window.head_for(placement(best));
                    }
                }
            }
        }
        if window.moving() {
            window.step(&mut self.overflow);
        }
    }

    /// Drops the emptied level at `key`.
    fn remove_level(&mut self, key: u64) {
        match self.window.as_mut().and_then(|w| Some((w.slot(key)?, w))) {
            Some((s, window)) => window.clear(s),
            None => {
                self.overflow.remove(&key);
            }
        }
        self.len -= 1;
        if key == self.best_key {
            let in_window = self.window.as_ref().and_then(|w| w.first_key());
            let in_overflow = self.overflow.keys().next().copied();
            if let Some(best) = in_window.into_iter().chain(in_overflow).min() {
                self.best_key = best;
            }
        }
    }

    /// Appends the order in `slot` to the back of its price level and
    /// returns the level's new aggregate quantity. Always inlined, as
    /// `unlink` is: a move pays for each once, and a call's register saves
    /// were a sixth of each.
    #[inline(always)]
    pub fn push_back(&mut self, pool: &mut OrderPool, slot: u32) -> u64 {
        // One checked read of the order: the level is the side's, not the
        // pool's, so the order stays in hand while its level is found.
        let (order, link) = pool.get_with_link(slot);
        let leaves = order.displayed();
        let level = self.level_or_insert(order.price);
        let old_tail = level.tail;
        *link = Link {
            prev: old_tail,
            next: NIL,
        };
        if old_tail == NIL {
            level.head = slot;
        } else {
            pool.link_mut(old_tail).next = slot;
        }
        level.tail = slot;
        // Cannot overflow from input: every order's open quantity is backed
        // by a reservation, and all of them together by an asset supply
        // capped at `i64::MAX` (a restored snapshot's levels are checked
        // before they are built). Wrapping would corrupt the level silently.
        level.qty = level
            .qty
            .checked_add(leaves)
            .expect("a price level's quantity overflowed");
        level.qty
    }

    /// Takes the order in `slot` out of its level (with its open quantity)
    /// and returns the level's new aggregate quantity; an emptied level is
    /// removed.
    #[inline(always)]
    pub fn unlink(&mut self, pool: &mut OrderPool, slot: u32) -> u64 {
        // The order's own links are cleared with the same checked read that
        // takes them: a panic below leaves the book broken either way.
        let (price, leaves, prev, next) = {
            let (order, link) = pool.get_with_link(slot);
            let read = (order.price, order.displayed(), link.prev, link.next);
            *link = Link::NONE;
            read
        };
        let key = self.key(price);
        // Only resting orders are unlinked, found through the book or the
        // order index, never named by a command without that lookup: a
        // missing level, or an order its level does not link, is a broken
        // book, and carrying on would leave the order reachable. An end of
        // the queue is checked where it is about to be overwritten, so the
        // check costs a comparison in a branch taken anyway. This is the
        // hottest function of the book: its messages carry no values, which
        // would stay live in registers only to be printed.
        let level = self.level_mut(key).expect("a resting order's level exists");
        if prev == NIL {
            assert!(
                level.head == slot,
                "an order that is first on its level is not the level's head"
            );
            level.head = next;
        } else {
            pool.link_mut(prev).next = next;
        }
        if next == NIL {
            assert!(
                level.tail == slot,
                "an order that is last on its level is not the level's tail"
            );
            level.tail = prev;
        } else {
            pool.link_mut(next).prev = prev;
        }
        level.qty = level
            .qty
            .checked_sub(leaves)
            .expect("a level holds at least its order's open quantity");
        let remaining = level.qty;
        let emptied = level.head == NIL;
        // A level's quantity is the sum of its orders' open quantities,
        // each positive once resting: the sum is zero exactly when no order
        // is left. Checked here, where a level empties, because a drifted
        // aggregate would otherwise be published in book events and survive
        // into the next level at this price.
        assert!(
            (remaining == 0) == emptied,
            "a level's quantity is zero exactly when its queue is empty"
        );
        if emptied {
            self.remove_level(key);
        }
        remaining
    }

    /// [`BookSide::reduce`] for lots read from outside the book (a
    /// snapshot): `None`, and nothing changed, where the side has no level
    /// at `price` or the level holds fewer than `lots`.
    pub fn try_reduce(&mut self, price: u64, lots: u64) -> Option<u64> {
        let key = self.key(price);
        let level = self.level_mut(key)?;
        level.qty = level.qty.checked_sub(lots)?;
        Some(level.qty)
    }

    /// Lowers the aggregate at `price` by `lots` without touching the queue
    /// (the order itself shrank in place) and returns the new aggregate.
    pub fn reduce(&mut self, price: u64, lots: u64) -> u64 {
        let key = self.key(price);
        // Only called for an order that rests at `price` and shrank by
        // `lots`: a missing level or a smaller aggregate is a broken book.
        let level = self
            .level_mut(key)
            .unwrap_or_else(|| panic!("reducing a missing level at {price}"));
        level.qty = level
            .qty
            .checked_sub(lots)
            .unwrap_or_else(|| panic!("level at {price} holds less than the {lots} it loses"));
        level.qty
    }
}

impl BookSide {
    /// Moves an iceberg whose shown slice has just filled to the back of
    /// its level with a new slice of `shown` lots: the refill loses time
    /// priority. The order's `hidden` must already exclude the new slice.
    /// The level never empties on the way, so it is not removed and made
    /// again.
    pub fn requeue(&mut self, pool: &mut OrderPool, slot: u32, shown: u64) -> u64 {
        let price = pool.get(slot).price;
        let Link { prev, next } = pool.link(slot);
        let key = self.key(price);
        let level = self.level_mut(key).expect("an iceberg's level exists");
        if next != NIL {
            if prev == NIL {
                level.head = next;
            } else {
                pool.link_mut(prev).next = next;
            }
            pool.link_mut(next).prev = prev;
            let old_tail = level.tail;
            pool.link_mut(old_tail).next = slot;
            *pool.link_mut(slot) = Link {
                prev: old_tail,
                next: NIL,
            };
            level.tail = slot;
        }
        level.qty = level
            .qty
            .checked_add(shown)
            .expect("a price level's quantity overflowed");
        level.qty
    }
}

#[path = "book_sides.rs"]
mod sides;
pub(crate) use sides::Book;

#[cfg(test)]
#[path = "book_tests.rs"]
mod tests;
