//! Matching in a midpoint book, at the midpoint of the lit book.
//!
//! Matching runs only in continuous trading, with a best bid and a best
//! offer on the lit book (displayed orders: the quotes the market sees),
//! and only when their midpoint is a whole tick: prices are counted in
//! ticks, and a trade at a price off the grid could not be settled in
//! whole quote units. A spread of an odd number of ticks therefore leaves
//! the midpoint book waiting for the next quote.
//!
//! At a midpoint `m`, a buy takes part when its limit (an unlimited one's
//! bound) is at least `m`, a sell when its limit is at most `m`. Buys are
//! taken in priority order, each against the sells in theirs, and a pair
//! trades when the quantity it would trade (the smaller remainder) meets
//! both orders' minimum acceptable quantities; a minimum above an order's
//! remainder asks no more than the remainder. The later of the two to
//! enter the midpoint book is the taker (fees, aggressor side, its
//! self-trade mode), as an incoming order is the taker in the lit book.
//! Matching repeats until no pair can trade, so it leaves nothing that
//! could trade at `m`: running it again at the same midpoint does nothing.
//!
//! A midpoint trade is reported like any trade but does not become the
//! last price: it is derived from the lit quotes, so it moves no stop,
//! collar or volatility band.

use std::ops::Bound::{Excluded, Unbounded};

use exchange_types::{CancelReason, Event, Phase, SelfTradePrevention, Side};

use super::pairs::Pairs;
use super::reach;
use super::{Entry, MidBook};
use crate::engine::Engine;

/// Two orders that may trade: the buy and the sell.
#[derive(Clone, Copy)]
struct Pair {
    buy: u32,
    sell: u32,
    /// The later entry of the two: the taker.
    taker: u32,
    maker: u32,
}

impl Engine {
    /// The lit book's midpoint in ticks, if midpoint orders may trade at
    /// it now.
    pub(crate) fn midpoint_price(&self, instrument: u32) -> Option<u64> {
        let inst = &self.instruments[instrument as usize];
        if inst.phase != Phase::Continuous {
            return None;
        }
        let book = &self.books[instrument as usize];
        let bid = book.side(Side::Buy).best()?.price;
        let ask = book.side(Side::Sell).best()?.price;
        // The lit book is never crossed in continuous trading; a locked or
        // crossed one has no midpoint to trade at all the same.
        if bid >= ask || bid % 2 != ask % 2 {
            return None;
        }
        Some(bid / 2 + ask / 2 + bid % 2)
    }

    /// Runs matching for every instrument with midpoint orders on both
    /// sides whose midpoint moved since it last ran (after any command:
    /// the lit quotes may have moved, or a call ended).
    #[cold]
    pub(crate) fn rematch_midpoints(&mut self, out: &mut Vec<Event>) {
        let mut next = self.midpoints.two_sided().first().copied();
        while let Some(instrument) = next {
            let mid = self.midpoint_price(instrument);
            let last = self.midpoints.book(instrument).and_then(|b| b.last_mid);
            if mid != last {
                self.match_midpoints(instrument, out);
            }
            next = self
                .midpoints
                .two_sided()
                .range((Excluded(instrument), Unbounded))
                .next()
                .copied();
        }
        if !self.mmp_tripped.is_empty() {
            self.sweep_tripped(out);
        }
    }

    /// Matches an instrument's midpoint book at the current midpoint
    /// until no pair can trade: always the first pair in priority order
    /// (buys first, each against the sells in theirs), as a scan from the
    /// top after every trade would find it. The book's [`Pairs`] find it
    /// without that scan, and a midpoint out of the book's reach costs a
    /// binary search.
    pub(crate) fn match_midpoints(&mut self, instrument: u32, out: &mut Vec<Event>) {
        let mid = self.midpoint_price(instrument);
        let Some(book) = self.midpoints.books.get_mut(&instrument) else {
            return;
        };
        book.last_mid = mid;
        let Some(mid) = mid else {
            return;
        };
        if book.pairs.is_none() {
            let pairs = self.work_out_pairs(instrument);
            if let Some(book) = self.midpoints.books.get_mut(&instrument) {
                book.pairs = Some(pairs);
            }
        }
        while let Some((pair, row, column)) = self.first_pair(instrument, mid) {
            self.act_on_pair(pair, mid, out);
            self.refresh_held(instrument, Side::Buy, pair.buy, row);
            self.refresh_held(instrument, Side::Sell, pair.sell, column);
        }
        // What the pairs promise: nothing is left that a scan from the top
        // would find. Checked where it costs nothing in production.
        debug_assert!(self.scan_rows(instrument, mid).is_none());
    }

    /// The book's pairs worked out from its sides: the sells, then each
    /// buy finding its low among them.
    fn work_out_pairs(&self, instrument: u32) -> Pairs {
        let mut pairs = Pairs::default();
        if let Some(book) = self.midpoints.book(instrument) {
            for (at, entry) in book.asks.iter().enumerate() {
                pairs.insert_sell(at, self.held(entry));
            }
            for (at, entry) in book.bids.iter().enumerate() {
                pairs.insert_buy(at, self.held(entry));
            }
        }
        pairs
    }

    /// The first pair that can trade at `mid`, with its buy's row in the
    /// bids and its sell's in the asks.
    fn first_pair(&self, instrument: u32, mid: u64) -> Option<(Pair, usize, usize)> {
        let book = self.midpoints.book(instrument)?;
        let pairs = book.pairs.as_ref()?;
        let found = if pairs.covers(mid) {
            pairs.first_pair(mid)
        } else {
            None
        };
        let pair = found.and_then(|(row, column)| {
            let (b, s) = (book.bids.get(row)?, book.asks.get(column)?);
            self.pair_at(b, s, mid)
        });
        // The full scan the pairs stand for, checked where it costs nothing
        // in production.
        debug_assert_eq!(
            pair.map(|p| (p.buy, p.sell)),
            self.scan_rows(instrument, mid).map(|p| (p.buy, p.sell))
        );
        Some((pair?, found?.0, found?.1))
    }

    /// After a pair acted, brings what the book's pairs hold of one of its
    /// orders in step with the order: a trade or a decrement shrank it,
    /// unless it left the book. `at` is where it was in its side, and it
    /// is still there if it did not leave: a pair's action takes out no
    /// order but its own two (a fill that completes one, self-trade
    /// prevention cancelling one or both), and brings none in.
    fn refresh_held(&mut self, instrument: u32, side: Side, slot: u32, at: usize) {
        let Some(book) = self.midpoints.book(instrument) else {
            return;
        };
        let Some(entry) = book.side(side).get(at).filter(|e| e.slot == slot) else {
            return;
        };
        let held = self.held(entry);
        let Some(pairs) = self
            .midpoints
            .books
            .get_mut(&instrument)
            .and_then(|b| b.pairs.as_mut())
        else {
            return;
        };
        match side {
            Side::Buy if pairs.buys()[at] != held => pairs.update_buy(at, held.offer),
            Side::Sell if pairs.sells()[at] != held => pairs.update_sell(at, held.offer),
            _ => {}
        }
    }

    /// A pair trades, or self-trade prevention acts on it; an order the
    /// trade completed leaves the book.
    fn act_on_pair(&mut self, pair: Pair, mid: u64, out: &mut Vec<Event>) {
        let account = |slot: u32| self.orders.get(slot).account;
        if account(pair.taker) == account(pair.maker) {
            self.prevent_midpoint_self_trade(pair, out);
            return;
        }
        self.fill_midpoint(pair.taker, pair.maker, mid, out);
        for slot in [pair.buy, pair.sell] {
            if self.orders.get(slot).leaves() == 0 {
                self.unbook_midpoint(slot);
                self.release_all(slot, out);
                self.close_order(slot);
            }
        }
    }

    /// The first pair at `mid` by a scan of every row from the top: what
    /// the book's pairs must agree with.
    fn scan_rows(&self, instrument: u32, mid: u64) -> Option<Pair> {
        let book = self.midpoints.book(instrument)?;
        (0..book.bids.len()).find_map(|row| self.row_pair(book, row, mid))
    }

    /// The first sell, in priority order, the buy at `row` may trade with.
    /// A buy whose price is below the midpoint trades with none, so its
    /// row is not walked.
    fn row_pair(&self, book: &MidBook, row: usize, mid: u64) -> Option<Pair> {
        let b = book.bids.get(row)?;
        if self.orders.get(b.slot).price < mid {
            return None;
        }
        book.asks.iter().find_map(|s| self.pair_at(b, s, mid))
    }

    /// The buy and the sell as a pair, if both reach `mid` and a trade of
    /// the smaller remainder meets both minimums.
    fn pair_at(&self, b: &Entry, s: &Entry, mid: u64) -> Option<Pair> {
        let (buy, sell) = (self.held(b).offer, self.held(s).offer);
        if buy.price < mid || sell.price > mid || !reach::minimums_met(&buy, &sell) {
            return None;
        }
        let (taker, maker) = if b.time > s.time {
            (b.slot, s.slot)
        } else {
            (s.slot, b.slot)
        };
        Some(Pair {
            buy: b.slot,
            sell: s.slot,
            taker,
            maker,
        })
    }

    /// Two orders of one account met: the taker's mode decides, as in the
    /// lit book. Each outcome takes at least one of them out or shrinks
    /// one to nothing, so matching moves on.
    fn prevent_midpoint_self_trade(&mut self, pair: Pair, out: &mut Vec<Event>) {
        let reason = CancelReason::SelfTrade;
        match self.orders.get(pair.taker).stp {
            SelfTradePrevention::CancelNewest => self.cancel_resting(pair.taker, reason, out),
            SelfTradePrevention::CancelOldest => self.cancel_resting(pair.maker, reason, out),
            SelfTradePrevention::CancelBoth => {
                self.cancel_resting(pair.taker, reason, out);
                self.cancel_resting(pair.maker, reason, out);
            }
            SelfTradePrevention::Decrement => {
                let lots = self
                    .orders
                    .get(pair.taker)
                    .leaves()
                    .min(self.orders.get(pair.maker).leaves());
                for slot in [pair.taker, pair.maker] {
                    if self.orders.get(slot).leaves() == lots {
                        self.cancel_resting(slot, reason, out);
                    } else {
                        self.orders.get_mut(slot).qty -= lots;
                        self.emit_canceled(slot, reason, lots, out);
                        self.trim_reservation(slot, out);
                    }
                }
            }
        }
    }
}
