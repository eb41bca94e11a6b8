//! Midpoint orders: non-displayed orders pegged to the midpoint of the lit
//! book's best bid and offer, kept in a midpoint book of their own per
//! instrument and matched only against each other, as in Xetra's midpoint
//! order book (Xetra Market Model Equities, "Xetra Midpoint") and
//! Nasdaq's Midpoint Peg. The lit book's matching never sees them, so it
//! pays nothing for them (`docs/market-model.md`, "Midpoint orders").
//!
//! Priority in each side: unlimited orders first, then by limit (the
//! better first), then by time of entry into the midpoint book. An order
//! keeps its place through fills and reductions; a new limit or a larger
//! quantity sends it to the back.
//!
//! The book is small by rule (`MAX_MIDPOINT_ORDERS_PER_INSTRUMENT` in
//! `exchange_types::limits`): each side is a vector in priority order, so
//! entering and leaving cost a shift of at most that many entries.

use std::collections::{BTreeMap, BTreeSet};

use exchange_types::{CancelReason, Event, Side, TimeInForce};

use crate::engine::Engine;

mod audit;
mod cover;
mod matching;
mod pairs;
mod reach;
#[cfg(test)]
mod tests;

/// What admission decided about a midpoint order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Terms {
    /// No limit: its price is a bound, and it goes first in its side.
    pub unlimited: bool,
    /// Minimum acceptable quantity in lots, held on every execution.
    pub min_lots: Option<u64>,
}

/// One order in a midpoint book.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub slot: u32,
    pub terms: Terms,
    /// When it entered the book (the event sequence number then): time
    /// priority, and who is the taker of a trade (the later entry).
    pub time: u64,
}

/// An instrument's midpoint orders, each side in priority order.
#[derive(Clone, Debug, Default)]
pub(crate) struct MidBook {
    pub bids: Vec<Entry>,
    pub asks: Vec<Entry>,
    /// The midpoint matching last ran at; `None` when it could not run.
    /// A cache only (matching leaves no pair that could trade at it), so
    /// not part of the state: a restored engine runs matching once more
    /// and finds nothing.
    last_mid: Option<u64>,
    /// The sides as matching sees them, with the book's reach ([`pairs`]),
    /// kept up to date as orders enter, leave and fill; `None` until first
    /// needed. Derived from the sides and their orders, so not part of the
    /// state: a restored book works it out when it next matches.
    pairs: Option<pairs::Pairs>,
}

impl MidBook {
    pub fn len(&self) -> usize {
        self.bids.len() + self.asks.len()
    }

    pub fn side(&self, side: Side) -> &Vec<Entry> {
        match side {
            Side::Buy => &self.bids,
            Side::Sell => &self.asks,
        }
    }

    fn side_mut(&mut self, side: Side) -> &mut Vec<Entry> {
        match side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        }
    }
}

/// Every instrument's midpoint book.
#[derive(Clone, Debug, Default)]
pub(crate) struct Midpoints {
    books: BTreeMap<u32, MidBook>,
    /// Instruments with midpoint orders on both sides: the only ones a
    /// move of the lit quotes can make trade.
    two_sided: BTreeSet<u32>,
}

impl Midpoints {
    #[inline]
    pub fn any_two_sided(&self) -> bool {
        !self.two_sided.is_empty()
    }

    pub fn book(&self, instrument: u32) -> Option<&MidBook> {
        self.books.get(&instrument)
    }

    /// Books by increasing instrument.
    pub fn books(&self) -> impl Iterator<Item = (u32, &MidBook)> {
        self.books.iter().map(|(&i, b)| (i, b))
    }

    /// Orders in every midpoint book.
    pub fn order_count(&self) -> usize {
        self.books.values().map(MidBook::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.books.is_empty()
    }

    /// Drops an emptied book and keeps `two_sided` in step with it.
    fn refresh(&mut self, instrument: u32) {
        let (two, empty) = match self.books.get(&instrument) {
            Some(b) => (!b.bids.is_empty() && !b.asks.is_empty(), b.len() == 0),
            None => (false, true),
        };
        if empty {
            self.books.remove(&instrument);
        }
        if two {
            self.two_sided.insert(instrument);
        } else {
            self.two_sided.remove(&instrument);
        }
    }

    /// Appends an entry read from a snapshot, which wrote each side in
    /// priority order (the restore's audit checks it).
    pub(crate) fn restore_entry(&mut self, instrument: u32, side: Side, entry: Entry) {
        let book = self.books.entry(instrument).or_default();
        book.side_mut(side).push(entry);
        book.pairs = None;
        self.refresh(instrument);
    }

    pub(crate) fn two_sided(&self) -> &BTreeSet<u32> {
        &self.two_sided
    }
}

/// The sort key of an entry in its side: unlimited first, then the
/// better limit, then earlier entry.
pub(crate) fn rank(side: Side, price: u64, entry: &Entry) -> (bool, u64, u64) {
    let price_key = match (entry.terms.unlimited, side) {
        (true, _) => 0,
        (false, Side::Buy) => !price,
        (false, Side::Sell) => price,
    };
    (!entry.terms.unlimited, price_key, entry.time)
}

impl Engine {
    /// Takes in a midpoint order just accepted and holding its
    /// reservation: it enters the midpoint book and matches there; an
    /// immediate-or-cancel one then expires what is left.
    #[cold]
    #[inline(never)]
    pub(crate) fn enter_midpoint(&mut self, slot: u32, terms: Terms, out: &mut Vec<Event>) {
        self.index_order(slot);
        let time = self.seq;
        self.book_midpoint(slot, terms, time);
        let (instrument, tif, id) = {
            let o = self.orders.get(slot);
            (o.instrument, o.tif, o.id)
        };
        self.match_midpoints(instrument, out);
        // Still open unless it filled or self-trade prevention ended it.
        if !crate::sessions::rests(tif) && self.order_by_id.get(&id) == Some(&slot) {
            self.unbook_midpoint(slot);
            self.expire(slot, out);
        }
        if !self.mmp_tripped.is_empty() {
            self.sweep_tripped(out);
        }
    }

    /// Puts an order in its side of the midpoint book at its rank.
    pub(crate) fn book_midpoint(&mut self, slot: u32, terms: Terms, time: u64) {
        let (instrument, side, price) = {
            let o = self.orders.get(slot);
            (o.instrument, o.side, o.price)
        };
        let entry = Entry { slot, terms, time };
        let key = rank(side, price, &entry);
        let held = self.held(&entry);
        let orders = &self.orders;
        let book = self.midpoints.books.entry(instrument).or_default();
        let list = book.side_mut(side);
        let at = list.partition_point(|e| rank(side, orders.get(e.slot).price, e) < key);
        list.insert(at, entry);
        if let Some(pairs) = &mut book.pairs {
            match side {
                Side::Buy => pairs.insert_buy(at, held),
                Side::Sell => pairs.insert_sell(at, held),
            }
        }
        self.midpoints.refresh(instrument);
    }

    /// An entry's order as matching sees it.
    fn held(&self, entry: &Entry) -> pairs::Held {
        let order = self.orders.get(entry.slot);
        pairs::Held {
            offer: reach::Offer::new(order.price, order.leaves(), entry.terms.min_lots),
            unlimited: entry.terms.unlimited,
        }
    }

    /// Takes an order out of the midpoint book and returns its entry.
    #[cold]
    #[inline(never)]
    pub(crate) fn unbook_midpoint(&mut self, slot: u32) -> Entry {
        let (instrument, side) = {
            let o = self.orders.get(slot);
            (o.instrument, o.side)
        };
        // Only open midpoint orders, found through the book or the order
        // index, are taken out: one missing is a broken book.
        let book = self
            .midpoints
            .books
            .get_mut(&instrument)
            .expect("a midpoint order's book exists");
        let list = book.side_mut(side);
        let at = list
            .iter()
            .position(|e| e.slot == slot)
            .expect("a midpoint order is in its book");
        let entry = list.remove(at);
        if let Some(pairs) = &mut book.pairs {
            match side {
                Side::Buy => pairs.remove_buy(at),
                Side::Sell => pairs.remove_sell(at),
            }
        }
        self.midpoints.refresh(instrument);
        entry
    }

    /// A replaced midpoint order: a new limit makes it limited, and a new
    /// limit or a larger quantity sends it to the back; then it matches,
    /// as its quantity or limit may now meet a contra order.
    #[cold]
    #[inline(never)]
    pub(crate) fn requeue_midpoint(
        &mut self,
        slot: u32,
        limit_given: bool,
        keeps_priority: bool,
        out: &mut Vec<Event>,
    ) {
        let mut entry = self.unbook_midpoint(slot);
        entry.terms.unlimited &= !limit_given;
        if !keeps_priority {
            entry.time = self.seq;
        }
        self.book_midpoint(slot, entry.terms, entry.time);
        let instrument = self.orders.get(slot).instrument;
        self.match_midpoints(instrument, out);
        if !self.mmp_tripped.is_empty() {
            self.sweep_tripped(out);
        }
    }

    /// Slots of an instrument's midpoint orders, bids then asks, each in
    /// priority order.
    pub(crate) fn midpoint_slots(&self, instrument: u32) -> Vec<u32> {
        self.midpoints.book(instrument).map_or_else(Vec::new, |b| {
            b.bids.iter().chain(&b.asks).map(|e| e.slot).collect()
        })
    }

    /// Cancels every midpoint order of an instrument (new rules, a
    /// delisting): their limits and bounds were in the old grid.
    pub(crate) fn cancel_midpoints(
        &mut self,
        instrument: u32,
        reason: CancelReason,
        out: &mut Vec<Event>,
    ) {
        for slot in self.midpoint_slots(instrument) {
            self.cancel_resting(slot, reason, out);
        }
    }

    /// Expires an instrument's midpoint orders whose time in force ends.
    pub(crate) fn expire_midpoints(
        &mut self,
        instrument: u32,
        ends: fn(TimeInForce) -> bool,
        out: &mut Vec<Event>,
    ) {
        for slot in self.midpoint_slots(instrument) {
            if ends(self.orders.get(slot).tif) {
                self.unbook_midpoint(slot);
                self.expire(slot, out);
            }
        }
    }
}
